-- Plugin host (portable SQL, as in 0001: BIGINT/TEXT only, booleans as BIGINT 0/1).

-- A tenant's plugin catalog. Uploaded binaries are stored here (base64 text, so both engines
-- store them alike), addressed by sha256; built-in plugins are embedded in the binary and have
-- no content here.
CREATE TABLE plugins (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    name TEXT NOT NULL,
    version TEXT,
    -- the WIT world (`spam-check-plugin`...) and package version (`0.1.0`) it targets
    world TEXT NOT NULL,
    api_version TEXT NOT NULL,
    size BIGINT NOT NULL,
    built_in BIGINT NOT NULL DEFAULT 0,
    content TEXT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX plugins_sha256_unique ON plugins (tenant_id, sha256);

-- At most one plugin per hook and tenant.
CREATE TABLE plugin_bindings (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    hook TEXT NOT NULL,
    plugin_id BIGINT NOT NULL,
    config TEXT NOT NULL,
    failure_policy TEXT NOT NULL,
    timeout_ms BIGINT NOT NULL,
    fuel BIGINT,
    memory_bytes BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, hook),
    FOREIGN KEY (tenant_id, plugin_id) REFERENCES plugins (tenant_id, id)
);

-- GitLab's spam log: one row per spam check, with the verdict the plugin gave.
CREATE TABLE spam_logs (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    user_id BIGINT NOT NULL,
    source_ip TEXT,
    user_agent TEXT,
    via_api BIGINT NOT NULL DEFAULT 1,
    noteable_type TEXT NOT NULL,
    title TEXT,
    description TEXT,
    -- allow, conditional_allow, disallow, block_user, noop; NULL when the plugin failed
    verdict TEXT,
    reason TEXT NOT NULL,
    plugin TEXT NOT NULL,
    recaptcha_verified BIGINT NOT NULL DEFAULT 0,
    submitted_as_ham BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX spam_logs_user ON spam_logs (tenant_id, user_id, id);
