-- Award emoji on an issue's notes (GitLab's `.../notes/:note_id/award_emoji`): `note_id` names
-- the note, 0 the issue itself. Not NULL, so the unique index also holds for the issue's own
-- awards (NULLs never collide in a unique index).
ALTER TABLE issue_award_emoji ADD COLUMN note_id BIGINT NOT NULL DEFAULT 0;
DROP INDEX issue_award_emoji_name_unique;
CREATE UNIQUE INDEX issue_award_emoji_name_unique ON issue_award_emoji (tenant_id, issue_id, note_id, user_id, name);
