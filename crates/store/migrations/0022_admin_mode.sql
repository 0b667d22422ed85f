-- GitLab's admin mode for the admin console: until when (ms since the epoch) a web session,
-- re-authenticated with the administrator's password, may use the /admin pages while the
-- `admin_mode` setting is on. NULL: not in admin mode.
ALTER TABLE web_sessions ADD COLUMN admin_mode_until BIGINT;
