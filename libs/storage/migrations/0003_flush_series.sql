-- Flush blocks (level 0) live a few minutes to an hour before compaction replaces them. Their index
-- rows move to a table of their own, so the day partitions of block_series hold only compacted blocks'
-- rows and never fill with the dead rows of retired flush blocks; flush_series stays as small as the
-- flush blocks awaiting compaction (VACUUM after each compaction pass returns its space).
CREATE TABLE flush_series (
    block_id  text   NOT NULL,
    series_id bigint NOT NULL,
    min_time  bigint NOT NULL,
    max_time  bigint NOT NULL,
    profiles  int    NOT NULL,
    times     bytea  NOT NULL,
    rows      bytea  NOT NULL,
    totals    bytea  NOT NULL,
    hashes    bytea  NOT NULL
);
CREATE INDEX flush_series_series_time ON flush_series (series_id, max_time);
CREATE INDEX flush_series_block ON flush_series (block_id);

INSERT INTO flush_series SELECT bs.* FROM block_series bs JOIN blocks b ON b.id = bs.block_id WHERE b.level = 0;
DELETE FROM block_series bs USING blocks b WHERE b.id = bs.block_id AND b.level = 0;

-- What every read of the index goes through: the rows of both tables.
CREATE VIEW index_series AS
    SELECT block_id, series_id, min_time, max_time, profiles, times, rows, totals, hashes FROM block_series
    UNION ALL
    SELECT block_id, series_id, min_time, max_time, profiles, times, rows, totals, hashes FROM flush_series;
