-- Users: identities (external sign-in providers), statuses and custom attributes.

CREATE TABLE identities (
    tenant_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    provider TEXT NOT NULL,
    extern_uid TEXT NOT NULL,
    saml_provider_id BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, provider),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX identities_extern_uid_unique ON identities (tenant_id, provider, extern_uid);

CREATE TABLE user_statuses (
    tenant_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    emoji TEXT NOT NULL,
    message TEXT NOT NULL,
    availability TEXT NOT NULL DEFAULT 'not_set',
    clear_status_at BIGINT,
    PRIMARY KEY (tenant_id, user_id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE user_custom_attributes (
    tenant_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (tenant_id, user_id, key),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX users_created ON users (tenant_id, created_at);

-- Password reset and confirmation: only digests of the emailed tokens are kept.
ALTER TABLE users ADD COLUMN reset_password_token_digest TEXT;
ALTER TABLE users ADD COLUMN reset_password_sent_at BIGINT;
ALTER TABLE users ADD COLUMN confirmation_token_digest TEXT;
