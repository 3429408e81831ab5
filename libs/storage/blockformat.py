"""The block: one Parquet object holding many profiles of one tenant over a short window. This module
is its format (schema, versions, layout); `blockwrite` writes blocks and `blockread` reads them.

A block has seven sections (eight when compacted) in one wide table, told apart by the `section` column (other sections'
columns are null there and cost next to nothing):

    strings    string                                   every symbol string, de-duplicated
    functions  function_{name,system_name,filename}     string indices; function_start_line
    mappings   mapping_{filename,build_id}, mapping_{memory_start,memory_limit,file_offset}, mapping_flags
               (pprof's has_functions, has_filenames, has_line_numbers, has_inline_frames as bits 0-3)
    locations  location_{function,line,column,address,mapping}, location_id: one row per frame, that is
               per line of a pprof location; a location's lines are consecutive rows with the same
               location_id, innermost (inlined) first. A location without lines is one row, function -1
    labels     label_set, label_key, label_str, label_num, label_unit: pprof sample labels, one row
               per label of each distinct label set (strings as indices); set 0 is "no labels"
    stacks     node_parent, node_location               parent-pointer tree over frames; node 0 is the root
    profiles   series_fingerprint, series_labels (JSON), profile_type, time_ns, duration_ns, period,
               total, content_hash, and per profile three lists: nodes, labelsets, values, one entry
               per distinct (stack node, label set) with its summed self value
    trees      series_fingerprint, time_ns (the hour's start), duration_ns (TREE_SPAN_NS), total, and the
               lists nodes and values: per series and hour of profile time with at least TREE_MIN_PROFILES
               profiles, the plain sum of their self values per stack node (label sets summed away).
               Only compacted blocks carry it; the querier reads it instead of the profiles when a query
               takes the whole hour of a series and filters no samples (see the querier's `premerged`)

Version 1 blocks (no mapping_flags, location_id, location_column, labels, content_hash or labelsets:
every frame its own location, no sample labels) are still read.

Since version 3 the six symbol sections share one row group, each a run of its rows, and so do the
profiles when they fit in one group: every row group costs a column chunk per column, each compressed
on its own, and in a flush block of a few profiles the chunks of seven groups (mostly null) were most
of the writing time and a third of the file. A larger profiles section is split into row groups of
about `blockwrite.PROFILE_GROUP_ENTRIES` entries, so a query reads and decodes only the groups that
hold its rows; compacted blocks order their profiles by profile type, service and series (see
`blockwrite.series_order`), so one service's rows sit in a few groups.

Anyone can open a block with a Parquet reader, e.g. `SELECT * FROM 'x.parquet' WHERE section='profiles'`;
the README's "Reading blocks yourself" documents every column for them, with a DuckDB query that
`tests/integration/test_reading_blocks.py` checks against the querier, so keep it true when this changes.
The trees section is its own row group after the profiles (or shares group 0 with them when they fit
in it); readers that do not know it skip it, so it needs no new version: a block without it answers
from its profiles.

The file metadata key `flamewatch.block` holds the version, maps each section to its row groups and
(version 3) each section that shares group 0 to its rows [start, stop) in it.
"""

from __future__ import annotations

import pyarrow as pa

FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
META_KEY = b"flamewatch.block"  # the file metadata key of the block's layout (see above)
TREE_SPAN_NS = 3600 * 10**9  # a pre-merged tree sums one series' profiles of one hour
# A series' hour of fewer profiles has no tree: its one profile is as small to read as a tree would be,
# and a tree beside it would double what it stores
TREE_MIN_PROFILES = 2

SCHEMA = pa.schema([
    ("section", pa.string()),
    ("string", pa.string()),
    ("function_name", pa.int32()),
    ("function_system_name", pa.int32()),
    ("function_filename", pa.int32()),
    ("function_start_line", pa.int64()),
    ("mapping_filename", pa.int32()),
    ("mapping_build_id", pa.int32()),
    ("mapping_memory_start", pa.uint64()),
    ("mapping_memory_limit", pa.uint64()),
    ("mapping_file_offset", pa.uint64()),
    ("mapping_flags", pa.int32()),
    ("location_function", pa.int32()),
    ("location_line", pa.int64()),
    ("location_column", pa.int64()),
    ("location_address", pa.uint64()),
    ("location_mapping", pa.int32()),
    ("location_id", pa.int32()),
    ("label_set", pa.int32()),
    ("label_key", pa.int32()),
    ("label_str", pa.int32()),
    ("label_num", pa.int64()),
    ("label_unit", pa.int32()),
    ("node_parent", pa.int32()),
    ("node_location", pa.int32()),
    ("series_fingerprint", pa.int64()),
    ("series_labels", pa.string()),
    ("profile_type", pa.string()),
    ("time_ns", pa.int64()),
    ("duration_ns", pa.int64()),
    ("period", pa.int64()),
    ("total", pa.int64()),
    ("content_hash", pa.int64()),
    ("nodes", pa.list_(pa.int32())),
    ("labelsets", pa.list_(pa.int32())),
    ("values", pa.list_(pa.int64())),
])

# The per-profile columns besides the entry lists
PROFILE_COLUMNS = ("series_fingerprint", "series_labels", "profile_type", "time_ns", "duration_ns", "period",
                   "total", "content_hash")

# The columns of each symbol section begin with its prefix
SECTION_PREFIXES = {"functions": "function_", "mappings": "mapping_", "locations": "location_", "labels": "label_",
                    "stacks": "node_", "strings": "string"}
