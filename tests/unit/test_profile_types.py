"""Profile type ids, the split of a pprof into typed profiles, and which types are gauges."""

import pytest
from infra.gowire import go_bytes

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import Profile, ProfileType, decode, split


def go_like(sample_types: list[tuple[str, str]], period_type: tuple[str, str]) -> Profile:
    strings = [""]
    index = lambda s: strings.index(s) if s in strings else strings.append(s) or len(strings) - 1  # noqa: E731
    ref = pb.Profile()
    for t, u in sample_types:
        ref.sample_type.add(type=index(t), unit=index(u))
    ref.period_type.type, ref.period_type.unit = index(period_type[0]), index(period_type[1])
    ref.sample.add(value=list(range(1, len(sample_types) + 1)))
    ref.sample.add(value=[10 * v for v in range(1, len(sample_types) + 1)])
    ref.string_table.extend(strings)
    return decode(go_bytes(ref))


GO_CPU = ([("samples", "count"), ("cpu", "nanoseconds")], ("cpu", "nanoseconds"))
GO_HEAP = ([("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"),
            ("inuse_space", "bytes")], ("space", "bytes"))
GO_GOROUTINE = ([("goroutine", "count")], ("goroutine", "count"))
GO_CONTENTIONS = ([("contentions", "count"), ("delay", "nanoseconds")], ("contentions", "count"))


@pytest.mark.parametrize(("shape", "name", "ids"), [
    (GO_CPU, None, ["process_cpu:samples:count:cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"]),
    (GO_HEAP, None, ["memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
                     "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"]),
    (GO_GOROUTINE, None, ["goroutine:goroutine:count:goroutine:count"]),
    (GO_CONTENTIONS, "mutex", ["mutex:contentions:count:contentions:count",
                               "mutex:delay:nanoseconds:contentions:count"]),
    (GO_CONTENTIONS, "block", ["block:contentions:count:contentions:count",
                               "block:delay:nanoseconds:contentions:count"]),
    # Go's mutex and block profiles look the same; without a name the period type names them.
    (GO_CONTENTIONS, None, ["contentions:contentions:count:contentions:count",
                            "contentions:delay:nanoseconds:contentions:count"]),
    (([("wall time", "nano/s")], ("", "")), None, ["unknown:wall_time:nano_s:none:none"]),
], ids=["cpu", "heap", "goroutine", "mutex", "block", "contentions", "odd-names"])
def test_split_gives_one_typed_profile_per_sample_type(shape, name, ids):
    profile = go_like(*shape)
    typed = split(profile, name)
    assert [t.profile_type.id for t in typed] == ids
    for column, t in enumerate(typed):
        assert t.source is profile
        assert t.values.tolist() == [column + 1, 10 * (column + 1)]
        assert t.total == 11 * (column + 1)
        assert ProfileType.parse(t.profile_type.id) == t.profile_type


@pytest.mark.parametrize(("text", "parts"), [
    ("process_cpu:cpu:nanoseconds:cpu:nanoseconds", ("process_cpu", "cpu", "nanoseconds", "cpu", "nanoseconds")),
    ("memory:inuse_space:bytes:space:bytes", ("memory", "inuse_space", "bytes", "space", "bytes")),
    ("my.app-1:x.y:z-w:A_B:0", ("my.app-1", "x.y", "z-w", "A_B", "0")),
])
def test_profile_type_parse(text, parts):
    parsed = ProfileType.parse(text)
    assert (parsed.name, parsed.sample_type, parsed.sample_unit, parsed.period_type, parsed.period_unit) == parts
    assert parsed.id == text


@pytest.mark.parametrize("text", [
    "", "process_cpu", "a:b:c:d", "a:b:c:d:e:f", "a::c:d:e", "a:b:c:d:", "a:b c:d:e:f", "a:b:c:d:é",
    "process_cpu:cpu:nanoseconds:cpu:nanoseconds\n", "process_cpu:cpu:nanoseconds:cpu:nano\nseconds",
])
def test_profile_type_parse_rejects(text):
    with pytest.raises(ValueError) as info:
        ProfileType.parse(text)
    assert str(info.value) == (f'invalid profile type "{text}": expected name:sample_type:sample_unit:period_type:'
                               "period_unit, each of letters, digits, _ . -, for example "
                               "process_cpu:cpu:nanoseconds:cpu:nanoseconds")


@pytest.mark.parametrize(("sample_type", "gauge"), [
    ("inuse_space", True), ("inuse_objects", True), ("goroutine", True), ("goroutines", True),
    ("alloc_space", False), ("alloc_objects", False), ("cpu", False), ("samples", False), ("contentions", False),
    ("delay", False), ("inuse", False),
])
def test_gauge_detection(sample_type, gauge):
    assert ProfileType("memory", sample_type, "bytes", "space", "bytes").is_gauge is gauge


def test_gauges_of_a_go_heap_profile():
    assert [t.profile_type.is_gauge for t in split(go_like(*GO_HEAP))] == [False, False, True, True]
    assert [t.profile_type.is_gauge for t in split(go_like(*GO_CPU))] == [False, False]
    assert [t.profile_type.is_gauge for t in split(go_like(*GO_GOROUTINE))] == [True]
