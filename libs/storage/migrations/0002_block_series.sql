-- The profile index becomes one row per (block, series) instead of one row per profile: a row holds
-- the times, rows in the block, totals and content hashes of that series' profiles in that block as
-- packed big-endian arrays (int8send/int4send layout, read with numpy). A compacted hourly block holds
-- hundreds of profiles per series, so the index costs bytes per profile, not a row.
CREATE TABLE block_series (
    block_id  text   NOT NULL,
    series_id bigint NOT NULL,
    min_time  bigint NOT NULL,  -- ns since the epoch, of the series' first profile in the block
    max_time  bigint NOT NULL,
    profiles  int    NOT NULL,
    times     bytea  NOT NULL,  -- int64 per profile, ascending
    rows      bytea  NOT NULL,  -- int32 per profile: its row in the block's profiles section
    totals    bytea  NOT NULL,  -- int64 per profile: the sum of its values
    hashes    bytea  NOT NULL   -- int64 per profile: content hash (0 when unknown), so a retried push is not stored twice
) PARTITION BY RANGE (min_time);
CREATE INDEX block_series_series_time ON block_series (series_id, max_time);
CREATE INDEX block_series_block ON block_series (block_id);

ALTER TABLE blocks ADD COLUMN retired_at timestamptz;  -- when the block left the index: compacted into another, or expired
CREATE INDEX blocks_tenant_level ON blocks (tenant, state, level, min_time);

-- Move what the per-profile index holds into the new table, one day partition at a time.
DO $$
DECLARE
    day bigint;
    name text;
BEGIN
    FOR day IN
        SELECT DISTINCT (floor(min(time)::numeric / 86400000000000) * 86400000000000)::bigint
        FROM profiles GROUP BY block_id, series_id
    LOOP
        name := 'block_series_' || to_char(to_timestamp(day / 1000000000) AT TIME ZONE 'UTC', 'YYYYMMDD');
        EXECUTE format('CREATE TABLE IF NOT EXISTS %I PARTITION OF block_series FOR VALUES FROM (%s) TO (%s)',
                       name, day, day + 86400000000000);
    END LOOP;
END $$;

INSERT INTO block_series (block_id, series_id, min_time, max_time, profiles, times, rows, totals, hashes)
SELECT block_id, series_id, min(time), max(time), count(*),
       string_agg(int8send(time), ''::bytea ORDER BY time, row_in_block),
       string_agg(int4send(row_in_block), ''::bytea ORDER BY time, row_in_block),
       string_agg(int8send(total), ''::bytea ORDER BY time, row_in_block),
       string_agg(int8send(0::bigint), ''::bytea ORDER BY time, row_in_block)
FROM profiles GROUP BY block_id, series_id;

DROP TABLE profiles;
