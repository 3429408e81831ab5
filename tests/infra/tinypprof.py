"""Small pprof profiles built field by field, for tests of what the ingester accepts."""

from __future__ import annotations

import gzip

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from infra.stringtable import interner


def tiny_pprof(time_nanos: int = 0, sample_types: int = 1, duration_nanos: int = 10**9, value: int = 10_000_000,
               zipped: bool = True, function: str = "main.hot") -> bytes:
    """A CPU-like pprof with one sample of `sample_types` values (types cpu, cpu1, cpu2, ...) in `function`."""
    profile = pb.Profile(time_nanos=time_nanos, duration_nanos=duration_nanos, period=10_000_000)
    string = interner(profile)
    profile.string_table.append("")
    for i in range(sample_types):
        profile.sample_type.add(type=string(f"cpu{i or ''}"), unit=string("nanoseconds"))
    profile.period_type.type, profile.period_type.unit = string("cpu"), string("nanoseconds")
    profile.function.add(id=1, name=string(function))
    profile.location.add(id=1, line=[pb.Line(function_id=1)])
    profile.sample.add(location_id=[1], value=[value] * sample_types)
    data = profile.SerializeToString()
    return gzip.compress(data) if zipped else data


def stacks_pprof(stacks: dict[tuple[str, ...], int], time_nanos: int, duration_nanos: int = 10 * 10**9) -> bytes:
    """A gzipped CPU pprof (samples/count, cpu/nanoseconds) with one sample per stack: the stack's frames
    from the root down (`("main.main", "main.work")`), its value in 10 ms samples."""
    profile = pb.Profile(time_nanos=time_nanos, duration_nanos=duration_nanos, period=10_000_000)
    string = interner(profile)
    profile.string_table.append("")
    profile.sample_type.add(type=string("samples"), unit=string("count"))
    profile.sample_type.add(type=string("cpu"), unit=string("nanoseconds"))
    profile.period_type.type, profile.period_type.unit = string("cpu"), string("nanoseconds")
    ids: dict[str, int] = {}
    for stack, count in stacks.items():
        for name in stack:
            if name not in ids:
                ids[name] = len(ids) + 1
                profile.function.add(id=ids[name], name=string(name))
                profile.location.add(id=ids[name], line=[pb.Line(function_id=ids[name])])
        if count:
            profile.sample.add(location_id=[ids[n] for n in reversed(stack)], value=[count, count * 10_000_000])
    return gzip.compress(profile.SerializeToString())
