-- What the symbolizer answered for an address, kept so a query does not ask again (see the querier's
-- symbolization step). Only answers from debug information that was found are kept: debug information
-- never changes for a build ID, while a missing one may be uploaded later.
CREATE TABLE symbolized_frames (
    object_key  text   NOT NULL,  -- the mapping's build ID, or "name:<file name>" when it has none
    file_offset bigint NOT NULL,  -- the uint64 file offset's bits
    frames      jsonb  NOT NULL,  -- [[function, file, line], ...], innermost first; [] when no symbol covers it
    PRIMARY KEY (object_key, file_offset)
);
