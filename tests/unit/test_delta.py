"""Deltas of cumulative profiles: samples matched by stack and labels, whatever ids each profile uses."""

import numpy as np

from flamewatch.api.perftools.profiles import profile_pb2 as pb
from flamewatch.pprof import decode
from flamewatch.pprof.delta import subtract

NAMES = ["", "alloc_space", "bytes", "inuse_space", "main", "work", "leaf", "m.go", "span"]


def profile(samples, id_offset=0, labels=None) -> pb.Profile:
    """samples: [(stack of function names leaf first, alloc, inuse)]; ids shifted by id_offset."""
    p = pb.Profile(string_table=NAMES)
    p.sample_type.add(type=1, unit=2)
    p.sample_type.add(type=3, unit=2)
    for i, name in enumerate(["main", "work", "leaf"]):
        fid = 1 + i + id_offset
        p.function.add(id=fid, name=NAMES.index(name), filename=7)
        p.location.add(id=fid, address=0x1000 * (i + 1)).line.add(function_id=fid, line=10 + i)
    for n, (stack, alloc, inuse) in enumerate(samples):
        s = p.sample.add(location_id=[1 + ["main", "work", "leaf"].index(f) + id_offset for f in stack],
                         value=[alloc, inuse])
        if labels and labels[n]:
            s.label.add(key=8, num=labels[n])
    return decode(p.SerializeToString())


def values(p):
    return p.samples.values.tolist()


def test_renumbered_ids_still_match_and_gauges_are_left_alone():
    before = profile([(["leaf", "work", "main"], 100, 7), (["work", "main"], 50, 3)])
    after = profile([(["work", "main"], 80, 4), (["leaf", "work", "main"], 130, 9)], id_offset=40)
    delta, reset = subtract(after, before, [0])
    assert not reset
    assert values(delta) == [[30, 4], [30, 9]]


def test_a_new_stack_counts_in_full():
    before = profile([(["work", "main"], 50, 0)])
    after = profile([(["work", "main"], 60, 0), (["leaf", "main"], 25, 0)])
    assert values(subtract(after, before, [0])[0]) == [[10, 0], [25, 0]]


def test_a_stack_in_several_samples_is_summed_before_subtracting():
    before = profile([(["work", "main"], 6, 0)])
    after = profile([(["work", "main"], 5, 0), (["work", "main"], 3, 0)])
    delta, reset = subtract(after, before, [0])
    assert not reset
    assert values(delta) == [[2, 0], [0, 0]]


def test_labels_tell_samples_apart():
    before = profile([(["work", "main"], 10, 0), (["work", "main"], 20, 0)], labels=[1, 2])
    after = profile([(["work", "main"], 25, 0), (["work", "main"], 11, 0)], labels=[2, 1])
    assert values(subtract(after, before, [0])[0]) == [[5, 0], [1, 0]]


def test_a_decrease_is_a_reset():
    before = profile([(["work", "main"], 50, 0)])
    after = profile([(["work", "main"], 20, 0)])
    delta, reset = subtract(after, before, [0])
    assert reset
    assert delta is after


def test_the_increase_sums_to_the_difference_of_totals():
    rng = np.random.default_rng(1)
    stacks = [["main"], ["work", "main"], ["leaf", "work", "main"], ["leaf", "main"]]
    base = [(stacks[i % 4], int(v), 0) for i, v in enumerate(rng.integers(0, 100, 12))]
    grown = [(s, a + int(g), 0) for (s, a, _), g in zip(base, rng.integers(0, 50, 12))]
    before, after = profile(base), profile(grown[::-1])
    delta, reset = subtract(after, before, [0])
    assert not reset
    assert delta.samples.values[:, 0].sum() == after.samples.values[:, 0].sum() - before.samples.values[:, 0].sum()
