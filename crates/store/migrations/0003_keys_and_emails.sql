-- SSH keys, GPG keys and secondary emails of users (portable SQL, as in 0001).

CREATE TABLE ssh_keys (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    title TEXT NOT NULL,
    -- 'algorithm base64 [comment]', whitespace normalised
    public_key TEXT NOT NULL,
    -- rsa, dsa, ecdsa, ed25519, ecdsa_sk, ed25519_sk
    key_type TEXT NOT NULL,
    bits BIGINT NOT NULL,
    -- colon-separated MD5 hex (GitLab's legacy fingerprint)
    fingerprint TEXT NOT NULL,
    -- 'SHA256:' and unpadded base64, as ssh-keygen prints it
    fingerprint_sha256 TEXT NOT NULL,
    -- auth, signing, auth_and_signing
    usage_type TEXT NOT NULL DEFAULT 'auth_and_signing',
    expires_at BIGINT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX ssh_keys_fingerprint_sha256_unique ON ssh_keys (tenant_id, fingerprint_sha256);
CREATE INDEX ssh_keys_user ON ssh_keys (tenant_id, user_id, id);

CREATE TABLE gpg_keys (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    -- the armored public key block
    public_key TEXT NOT NULL,
    -- upper-case hex
    fingerprint TEXT NOT NULL,
    primary_keyid TEXT NOT NULL,
    -- the user ids' email addresses, lower-case, one per line
    emails TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX gpg_keys_fingerprint_unique ON gpg_keys (tenant_id, fingerprint);
CREATE INDEX gpg_keys_user ON gpg_keys (tenant_id, user_id, id);

-- Secondary emails. An address is unique in the tenant across these rows and users.email_lower.
CREATE TABLE emails (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    email TEXT NOT NULL,
    email_lower TEXT NOT NULL,
    confirmed_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX emails_email_lower_unique ON emails (tenant_id, email_lower);
CREATE INDEX emails_user ON emails (tenant_id, user_id, id);
