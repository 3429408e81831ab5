"""What changed between two sets of profiles: `stats` ranks functions by the change of their share and
says which changes the data can tell from noise. The querier feeds it stored profiles
(`flamewatch.querier.changes`); `flamewatch gate` feeds it pprof files."""
