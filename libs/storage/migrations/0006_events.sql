-- Events (OOM kills, restarts with an error; later regressions): what happened to a program, with the
-- labels its profiles carry. `key` makes recording idempotent per tenant: the collector keys a kill by
-- pod UID, container and restart count, so a re-list never records one kill twice.
CREATE TABLE events (
    id          bigserial PRIMARY KEY,
    tenant      text   NOT NULL,
    kind        text   NOT NULL,
    time        bigint NOT NULL,  -- ns since the epoch: when the program ended
    labels      jsonb  NOT NULL,
    payload     jsonb  NOT NULL,  -- exit_code, memory_limit_bytes, restart_count, started_ns, message
    key         text   NOT NULL,
    recorded_at bigint NOT NULL,  -- ns since the epoch
    UNIQUE (tenant, key)
);
CREATE INDEX events_tenant_time ON events (tenant, time);
