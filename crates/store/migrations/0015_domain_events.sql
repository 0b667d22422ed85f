-- The outbox of domain events (host/src/events.rs): every change that webhooks, system hooks
-- and audit need is recorded here in the transaction of the change itself, so a change and its
-- event are never one without the other. Ids come from the tenant's `domain_events` sequence,
-- so a tenant's events are numbered in the order their changes took their ids. `payload` is
-- JSON: the actor, the object before and after the change, and the changed fields.
CREATE TABLE domain_events (
    tenant_id BIGINT NOT NULL REFERENCES tenants (id),
    id BIGINT NOT NULL,
    kind TEXT NOT NULL,
    actor_id BIGINT,
    project_id BIGINT,
    subject_id BIGINT NOT NULL,
    payload TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
