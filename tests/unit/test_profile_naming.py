"""The one naming rule: a profile's name comes from its content; an explicit name may not contradict
it, and a file name only chooses between the names the content allows."""

import pytest
from infra.gowire import go_bytes
from test_profile_types import GO_CONTENTIONS, GO_CPU, GO_GOROUTINE, GO_HEAP, go_like

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import InvalidProfileName, ProfileType, decode, hint_from_file_name, profile_name, split
from flamewatch.pprof.naming import check_part


def contention_profile(leaf: str) -> pb.Profile:
    """A Go-shaped contention profile whose one sample's leaf frame is `leaf`, called from main.main."""
    strings = ["", "contentions", "count", "delay", "nanoseconds", leaf, "main.main"]
    ref = pb.Profile(string_table=strings, period_type=pb.ValueType(type=1, unit=2), period=1)
    ref.sample_type.add(type=1, unit=2)
    ref.sample_type.add(type=3, unit=4)
    ref.function.add(id=1, name=5)
    ref.function.add(id=2, name=6)
    ref.location.add(id=1, line=[pb.Line(function_id=1)])
    ref.location.add(id=2, line=[pb.Line(function_id=2)])
    ref.sample.add(location_id=[1, 2], value=[3, 3000])
    return ref


@pytest.mark.parametrize(("shape", "name"), [
    (GO_CPU, "process_cpu"), (GO_HEAP, "memory"), (GO_GOROUTINE, "goroutine"),
    (([("wall", "nanoseconds")], ("wall", "nanoseconds")), "wall"),
    (([("events", "count")], ("events", "count")), "events"),
    (([("x", "count")], ("", "")), "unknown"),
])
def test_name_comes_from_the_period_type(shape, name):
    assert profile_name(go_like(*shape)) == name


@pytest.mark.parametrize("hint", ["process_cpu", "mutex", "block", "goroutine", None])
def test_a_hint_never_contradicts_the_content(hint):
    """An allocation profile saved as cpu.pb.gz is still memory."""
    assert profile_name(go_like(*GO_HEAP), hint=hint) == "memory"
    assert profile_name(go_like(*GO_CPU), hint=hint) == "process_cpu"


@pytest.mark.parametrize(("leaf", "name"), [
    ("sync.(*Mutex).Unlock", "mutex"), ("sync.(*RWMutex).RUnlock", "mutex"), ("runtime.unlock", "mutex"),
    ("sync.(*Mutex).Lock", "block"), ("runtime.chanrecv1", "block"), ("runtime.selectgo", "block"),
    ("sync.(*WaitGroup).Wait", "block"), ("main.unlockedPath", "block"),
])
def test_contention_profiles_are_named_by_their_leaf_frames(leaf, name):
    """Go's mutex profile records the unlocking call, its block profile the blocking one."""
    profile = decode(go_bytes(contention_profile(leaf)))
    assert profile_name(profile) == name
    other = {"mutex": "block", "block": "mutex"}[name]
    assert profile_name(profile, hint=other) == name  # the content decides, not the file name


def test_a_contention_profile_without_samples_takes_the_hint():
    profile = go_like(*GO_CONTENTIONS)  # samples without stacks say nothing about mutex or block
    assert profile_name(profile, hint="mutex") == "mutex"
    assert profile_name(profile, hint="block") == "block"
    assert profile_name(profile, hint="process_cpu") == "contentions"
    assert profile_name(profile) == "contentions"


@pytest.mark.parametrize(("shape", "given"), [
    (GO_CPU, "my_cpu"), (GO_HEAP, "memory"), (GO_CONTENTIONS, "mutex"), (GO_CONTENTIONS, "block"),
    (GO_HEAP, "app.heap-v2"),
])
def test_an_explicit_name_is_kept_when_it_fits(shape, given):
    assert profile_name(go_like(*shape), given) == given


@pytest.mark.parametrize(("shape", "given", "allowed", "period_type"), [
    (GO_HEAP, "process_cpu", "memory", "space"),
    (GO_CPU, "memory", "process_cpu", "cpu"),
    (GO_CONTENTIONS, "goroutine", "mutex or block", "contentions"),
])
def test_an_explicit_known_name_that_contradicts_the_content_is_refused(shape, given, allowed, period_type):
    with pytest.raises(InvalidProfileName) as info:
        split(go_like(*shape), given)
    assert str(info.value) == (f'profile name "{given}" contradicts the profile: its period type "{period_type}" '
                               f"makes it {allowed}; leave the name out to have it taken from the profile")


@pytest.mark.parametrize("given", ["bad name!", "my:type", "é", "a/b", "x\n"])
def test_an_explicit_name_breaking_the_id_rule_is_refused(given):
    with pytest.raises(InvalidProfileName) as info:
        split(go_like(*GO_CPU), given)
    assert str(info.value) == (f'invalid profile name "{given}": use only letters, digits, "_", "." and "-" '
                               "(for example process_cpu or memory)")


def test_ids_of_accepted_names_always_parse_back():
    """The ingest rule and the querier's parse are one rule."""
    for given in ("my_cpu", "app.heap-v2", None):
        for typed in split(go_like(*GO_CPU), given):
            assert ProfileType.parse(typed.profile_type.id) == typed.profile_type
    with pytest.raises(InvalidProfileName):
        check_part("a:b")


@pytest.mark.parametrize(("file_name", "hint"), [
    ("cpu.pb.gz", "process_cpu"), ("profile", "process_cpu"), ("heap.pprof", "memory"), ("allocs-1.pb.gz", "memory"),
    ("prod-mutex.pb.gz", "mutex"), ("block.pb", "block"), ("goroutine.txt", "goroutine"), ("data.pb.gz", None),
    ("CPU_heap.pb.gz", "process_cpu"),
])
def test_hints_from_file_names(file_name, hint):
    assert hint_from_file_name(file_name) == hint
