-- The origins (JSON array of `scheme://host:port`) an administrator granted a plugin binding
-- for `outbound-http`; NULL: not granted.
ALTER TABLE plugin_bindings ADD COLUMN outbound_http TEXT;
