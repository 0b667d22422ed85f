-- OAuth 2.0 provider: applications, authorization codes (grants), access/refresh tokens, and
-- the web sessions the sign-in and consent pages use. Only SHA-256 digests of secrets, codes,
-- tokens and session ids are stored.

CREATE TABLE oauth_applications (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    -- NULL for instance-wide applications created through the admin API
    owner_id BIGINT,
    name TEXT NOT NULL,
    uid TEXT NOT NULL,
    secret_digest TEXT NOT NULL,
    -- registered redirect URIs, one per line
    redirect_uri TEXT NOT NULL,
    -- space-separated
    scopes TEXT NOT NULL,
    confidential BIGINT NOT NULL DEFAULT 1,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, owner_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX oauth_applications_uid_unique ON oauth_applications (tenant_id, uid);
CREATE INDEX oauth_applications_owner ON oauth_applications (tenant_id, owner_id);

CREATE TABLE oauth_access_grants (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    application_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    code_digest TEXT NOT NULL,
    redirect_uri TEXT NOT NULL,
    scopes TEXT NOT NULL,
    code_challenge TEXT,
    code_challenge_method TEXT,
    -- OpenID Connect: echoed in the ID token
    nonce TEXT,
    expires_at BIGINT NOT NULL,
    -- set when the code is exchanged: a second exchange is a replay
    used_at BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, application_id) REFERENCES oauth_applications (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX oauth_access_grants_code_digest_unique ON oauth_access_grants (tenant_id, code_digest);

CREATE TABLE oauth_access_tokens (
    tenant_id BIGINT NOT NULL,
    id BIGINT NOT NULL,
    application_id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    token_digest TEXT NOT NULL,
    refresh_digest TEXT,
    scopes TEXT NOT NULL,
    -- the authorization code this token (or the token it was refreshed from) came from
    grant_id BIGINT,
    expires_at BIGINT,
    revoked_at BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, application_id) REFERENCES oauth_applications (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX oauth_access_tokens_token_digest_unique ON oauth_access_tokens (tenant_id, token_digest);
CREATE UNIQUE INDEX oauth_access_tokens_refresh_digest_unique ON oauth_access_tokens (tenant_id, refresh_digest);
CREATE INDEX oauth_access_tokens_grant ON oauth_access_tokens (tenant_id, grant_id);
CREATE INDEX oauth_access_tokens_owner ON oauth_access_tokens (tenant_id, user_id, application_id);

CREATE TABLE web_sessions (
    tenant_id BIGINT NOT NULL,
    id_digest TEXT NOT NULL,
    user_id BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id_digest),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

-- OpenID Connect: one RS256 signing key per tenant (PKCS#8, encrypted with the secret key).
CREATE TABLE oauth_signing_keys (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    kid TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id)
);
