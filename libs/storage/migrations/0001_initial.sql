-- Series, blocks and the per-day partitioned profile index.
CREATE TABLE series (
    id          bigserial PRIMARY KEY,
    tenant      text   NOT NULL,
    fingerprint bigint NOT NULL,
    profile_type text  NOT NULL,
    labels      jsonb  NOT NULL,
    first_seen  bigint NOT NULL,  -- ns since the epoch
    last_seen   bigint NOT NULL,
    UNIQUE (tenant, fingerprint)
);
CREATE INDEX series_labels ON series USING gin (labels jsonb_path_ops);
CREATE INDEX series_tenant_type ON series (tenant, profile_type, last_seen);

CREATE TABLE blocks (
    id         text PRIMARY KEY,  -- ULID
    tenant     text   NOT NULL,
    key        text   NOT NULL UNIQUE,
    min_time   bigint NOT NULL,
    max_time   bigint NOT NULL,
    level      int    NOT NULL,
    bytes      bigint NOT NULL,
    profiles   int    NOT NULL,
    state      text   NOT NULL DEFAULT 'live',  -- live | compacted
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blocks_tenant_time ON blocks (tenant, min_time, max_time);

-- One row per typed profile. Partitions (one per UTC day, named profiles_YYYYMMDD) are created on
-- demand by the writer, so retention is a DROP TABLE.
CREATE TABLE profiles (
    tenant       text   NOT NULL,
    series_id    bigint NOT NULL,
    time         bigint NOT NULL,  -- ns since the epoch
    block_id     text   NOT NULL,
    row_in_block int    NOT NULL,
    total        bigint NOT NULL
) PARTITION BY RANGE (time);
CREATE INDEX profiles_series_time ON profiles (series_id, time);
CREATE INDEX profiles_block ON profiles (block_id);
