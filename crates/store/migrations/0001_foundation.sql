-- Portable SQL: each statement runs unchanged on SQLite and PostgreSQL.
-- Timestamps are BIGINT milliseconds since the epoch; dates are 'YYYY-MM-DD' text; booleans
-- are BIGINT 0/1 (sqlx's Any driver cannot carry SQLite booleans).

CREATE TABLE tenants (
    id BIGINT PRIMARY KEY,
    -- lower-case host name without port; '' for the default tenant
    host TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX tenants_host_unique ON tenants (host);

-- Per-tenant id allocation, so that one tenant's ids say nothing about another's.
CREATE TABLE id_sequences (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    name TEXT NOT NULL,
    last_value BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

CREATE TABLE users (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    username TEXT NOT NULL,
    username_lower TEXT NOT NULL,
    email TEXT NOT NULL,
    email_lower TEXT NOT NULL,
    name TEXT NOT NULL,
    -- active, blocked, deactivated, ldap_blocked, blocked_pending_approval
    state TEXT NOT NULL,
    -- human, ghost
    user_type TEXT NOT NULL DEFAULT 'human',
    is_admin BIGINT NOT NULL DEFAULT 0,
    password_digest TEXT,
    password_expires_at BIGINT,
    bio TEXT NOT NULL DEFAULT '',
    location TEXT NOT NULL DEFAULT '',
    public_email TEXT,
    skype TEXT NOT NULL DEFAULT '',
    linkedin TEXT NOT NULL DEFAULT '',
    twitter TEXT NOT NULL DEFAULT '',
    discord TEXT NOT NULL DEFAULT '',
    website_url TEXT NOT NULL DEFAULT '',
    organization TEXT NOT NULL DEFAULT '',
    job_title TEXT NOT NULL DEFAULT '',
    pronouns TEXT,
    note TEXT,
    theme_id BIGINT NOT NULL DEFAULT 1,
    color_scheme_id BIGINT NOT NULL DEFAULT 1,
    projects_limit BIGINT NOT NULL DEFAULT 100000,
    can_create_group BIGINT NOT NULL DEFAULT 1,
    external BIGINT NOT NULL DEFAULT 0,
    private_profile BIGINT NOT NULL DEFAULT 0,
    two_factor_enabled BIGINT NOT NULL DEFAULT 0,
    avatar_path TEXT,
    shared_runners_minutes_limit BIGINT,
    extra_shared_runners_minutes_limit BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    confirmed_at BIGINT,
    last_sign_in_at BIGINT,
    current_sign_in_at BIGINT,
    last_sign_in_ip TEXT,
    current_sign_in_ip TEXT,
    last_activity_on TEXT,
    failed_attempts BIGINT NOT NULL DEFAULT 0,
    locked_until BIGINT,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX users_username_lower_unique ON users (tenant_id, username_lower);
CREATE UNIQUE INDEX users_email_lower_unique ON users (tenant_id, email_lower);

CREATE TABLE personal_access_tokens (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    name TEXT NOT NULL,
    -- hex SHA-256 of the secret; the secret itself is never stored
    token_digest TEXT NOT NULL,
    -- space-separated
    scopes TEXT NOT NULL,
    impersonation BIGINT NOT NULL DEFAULT 0,
    revoked BIGINT NOT NULL DEFAULT 0,
    -- 'YYYY-MM-DD'; the token stops working at 00:00 UTC on that day
    expires_at TEXT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX personal_access_tokens_token_digest_unique ON personal_access_tokens (tenant_id, token_digest);
CREATE INDEX personal_access_tokens_user ON personal_access_tokens (tenant_id, user_id, id);

-- One row per tenant; `data` holds the settings that differ from the defaults, as JSON.
CREATE TABLE application_settings (
    tenant_id BIGINT PRIMARY KEY REFERENCES tenants (id),
    id BIGINT NOT NULL,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
