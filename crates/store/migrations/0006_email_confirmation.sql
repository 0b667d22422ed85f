-- Secondary emails added without skip_confirmation get a confirmation mail; only the
-- digest of its token is kept.
ALTER TABLE emails ADD COLUMN confirmation_token_digest TEXT;
