-- Debug information belongs to tenants, so an answer of the symbolizer is one tenant's: object keys now
-- start with the tenant ("<tenant>/<build ID>", "<tenant>/name:<file name>"). The answers kept before
-- were made from the debug information every tenant shared, so they are dropped rather than handed to
-- each tenant; the querier asks for them again, from the tenant's own uploads and the shared set.
DELETE FROM symbolized_frames;
COMMENT ON COLUMN symbolized_frames.object_key IS
    '<tenant>/<build ID>, or <tenant>/name:<file name> for a mapping without a build ID';
