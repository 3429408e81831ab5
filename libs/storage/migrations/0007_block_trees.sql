-- Whether a block holds pre-merged trees (per series and hour, the sum of its profiles per stack node):
-- the querier reads those instead of the profiles where a query takes whole hours (see blockformat).
ALTER TABLE blocks ADD COLUMN trees boolean NOT NULL DEFAULT false;
