"""Relabeling: a table of rules applied to label sets, and the checks that reject rules which cannot work."""

import hashlib

import pytest

from flamewatch.labels.relabel import RelabelConfig, check_relabel, relabel

POD = {"__address__": "10.0.0.1:6060", "__meta_pod": "api-7f9", "__meta_ns": "prod", "team": "core"}


def _hashmod(value: str, modulus: int) -> str:
    """The expected hashmod result, computed independently of the code under test."""
    return str(int.from_bytes(hashlib.md5(value.encode()).digest()[8:], "big") % modulus)


CASES = [
    # (name, input labels, rules, expected labels or None for dropped)
    ("no rules", POD, [], POD),
    ("replace copies a label",
     {"a": "x"}, [RelabelConfig(source_labels=("a",), target_label="b")], {"a": "x", "b": "x"}),
    ("replace with a group",
     {"__address__": "10.0.0.1:6060"},
     [RelabelConfig(source_labels=("__address__",), regex="(.+):(\\d+)", target_label="host")],
     {"__address__": "10.0.0.1:6060", "host": "10.0.0.1"}),
    ("replace with ${n} and literal text",
     {"__address__": "10.0.0.1:6060"},
     [RelabelConfig(source_labels=("__address__",), regex="(.+):(\\d+)", target_label="instance",
                    replacement="${1}_port${2}")],
     {"__address__": "10.0.0.1:6060", "instance": "10.0.0.1_port6060"}),
    ("replace with a named group",
     {"a": "v1.4"}, [RelabelConfig(source_labels=("a",), regex="v(?P<ver>.*)", target_label="b",
                                   replacement="${ver}")],
     {"a": "v1.4", "b": "1.4"}),
    ("$1x names group 1x, which does not exist",
     {"a": "x"}, [RelabelConfig(source_labels=("a",), target_label="b", replacement="$1x-")], {"a": "x", "b": "-"}),
    ("$$ is a literal dollar",
     {"a": "x"}, [RelabelConfig(source_labels=("a",), target_label="b", replacement="$$$1")], {"a": "x", "b": "$x"}),
    ("replace is anchored: a partial match changes nothing",
     {"a": "xyz"}, [RelabelConfig(source_labels=("a",), regex="y", target_label="b", replacement="hit")],
     {"a": "xyz"}),
    ("replace with the default regex and a fixed replacement",
     {"a": "x"}, [RelabelConfig(target_label="env", replacement="prod")], {"a": "x", "env": "prod"}),
    ("an empty replacement removes the target label",
     {"a": "x", "b": "old"}, [RelabelConfig(source_labels=("a",), target_label="b", replacement="")], {"a": "x"}),
    ("an empty group removes the target label",
     {"a": "", "b": "old"}, [RelabelConfig(source_labels=("a",), target_label="b")], {"a": ""}),
    ("missing source labels join as empty strings with the separator",
     {"a": "x", "c": "z"}, [RelabelConfig(source_labels=("a", "b", "c"), target_label="j")],
     {"a": "x", "c": "z", "j": "x;;z"}),
    ("custom separator",
     {"a": "x", "b": "y"}, [RelabelConfig(source_labels=("a", "b"), separator="/", target_label="j")],
     {"a": "x", "b": "y", "j": "x/y"}),
    ("the target label name may use groups",
     {"k": "zone", "v": "eu"}, [RelabelConfig(source_labels=("k", "v"), regex="(.*);(.*)", target_label="${1}",
                                               replacement="$2")],
     {"k": "zone", "v": "eu", "zone": "eu"}),
    ("a target that expands to an invalid name changes nothing",
     {"k": "1bad"}, [RelabelConfig(source_labels=("k",), target_label="$1", replacement="v")], {"k": "1bad"}),
    ("keep on a match", POD, [RelabelConfig(source_labels=("__meta_ns",), regex="prod|staging", action="keep")],
     POD),
    ("keep drops on no match", POD, [RelabelConfig(source_labels=("__meta_ns",), regex="dev", action="keep")],
     None),
    ("keep is anchored", POD, [RelabelConfig(source_labels=("__meta_ns",), regex="pro", action="keep")], None),
    ("keep a missing label matches the empty string",
     {"a": "x"}, [RelabelConfig(source_labels=("missing",), regex="", action="keep")], {"a": "x"}),
    ("drop on a match", POD, [RelabelConfig(source_labels=("team",), regex="core", action="drop")], None),
    ("drop keeps on no match", POD, [RelabelConfig(source_labels=("team",), regex="cor", action="drop")], POD),
    ("drop stops later rules",
     {"a": "x"}, [RelabelConfig(source_labels=("a",), action="drop"), RelabelConfig(target_label="b")], None),
    ("hashmod",
     {"__address__": "10.0.0.1:6060"},
     [RelabelConfig(source_labels=("__address__",), target_label="shard", modulus=8, action="hashmod")],
     {"__address__": "10.0.0.1:6060", "shard": _hashmod("10.0.0.1:6060", 8)}),
    ("hashmod over joined values",
     {"a": "x", "b": "y"},
     [RelabelConfig(source_labels=("a", "b"), target_label="shard", modulus=1000, action="hashmod")],
     {"a": "x", "b": "y", "shard": _hashmod("x;y", 1000)}),
    ("hashmod then keep one shard",
     {"a": "x"},
     [RelabelConfig(source_labels=("a",), target_label="__tmp_shard", modulus=2, action="hashmod"),
      RelabelConfig(source_labels=("__tmp_shard",), regex=str(1 - int(_hashmod("x", 2))), action="keep")],
     None),
    ("labelmap copies matching labels under new names",
     POD, [RelabelConfig(regex="__meta_(.+)", action="labelmap")],
     {**POD, "pod": "api-7f9", "ns": "prod"}),
    ("labelmap with a prefix in the replacement",
     {"__meta_pod": "p"}, [RelabelConfig(regex="__meta_(.+)", replacement="k8s_${1}", action="labelmap")],
     {"__meta_pod": "p", "k8s_pod": "p"}),
    ("labelmap then labeldrop renames",
     POD, [RelabelConfig(regex="__meta_(.+)", action="labelmap"), RelabelConfig(regex="__meta_.*", action="labeldrop")],
     {"__address__": "10.0.0.1:6060", "team": "core", "pod": "api-7f9", "ns": "prod"}),
    ("labeldrop is anchored", {"team": "a", "teams": "b"}, [RelabelConfig(regex="team", action="labeldrop")],
     {"teams": "b"}),
    ("labelkeep", POD, [RelabelConfig(regex="__address__|team", action="labelkeep")],
     {"__address__": "10.0.0.1:6060", "team": "core"}),
    ("rules apply in order",
     {"a": "x"},
     [RelabelConfig(source_labels=("a",), target_label="b", replacement="$1-1"),
      RelabelConfig(source_labels=("b",), target_label="c", replacement="$1-2")],
     {"a": "x", "b": "x-1", "c": "x-1-2"}),
]


@pytest.mark.parametrize(("labels", "rules", "expected"), [case[1:] for case in CASES], ids=[c[0] for c in CASES])
def test_relabel(labels, rules, expected):
    before = dict(labels)
    assert relabel(labels, rules) == expected
    assert labels == before  # the input is never changed


def test_regex_is_compiled_once():
    cfg = RelabelConfig(regex="a+")
    assert cfg.pattern is cfg.pattern


BAD_RULES = [
    (RelabelConfig(action="rename", target_label="x"),
     'rc.action: unknown action "rename", expected one of replace, keep, drop, hashmod, labelmap, labeldrop, '
     "labelkeep"),
    (RelabelConfig(), "rc.target_label: required for action replace"),
    (RelabelConfig(action="hashmod", modulus=4), "rc.target_label: required for action hashmod"),
    (RelabelConfig(action="hashmod", target_label="s"),
     "rc.modulus: required for action hashmod and must be greater than zero"),
    (RelabelConfig(action="hashmod", target_label="$1", modulus=2), 'rc.target_label: "$1" is not a valid label name'),
    (RelabelConfig(target_label="bad-name"), 'rc.target_label: "bad-name" is not a valid label name'),
    (RelabelConfig(regex="(", action="keep"),
     'rc.regex: invalid regular expression "(": missing ), unterminated subpattern at position 0'),
    (RelabelConfig(source_labels=("a-b",), action="keep"), 'rc.source_labels: "a-b" is not a valid label name'),
    (RelabelConfig(source_labels=("a",), action="labelmap"), "rc.source_labels: not allowed for action labelmap"),
    (RelabelConfig(target_label="a", action="labeldrop"), "rc.target_label: not allowed for action labeldrop"),
    (RelabelConfig(source_labels=("a",), action="labelkeep"), "rc.source_labels: not allowed for action labelkeep"),
    (RelabelConfig(action="labelmap", replacement="a-$1"),
     'rc.replacement: "a-$1" is not a valid label name for action labelmap'),
]


@pytest.mark.parametrize(("cfg", "message"), BAD_RULES, ids=[m.split(":")[0] + str(i) for i, (_, m) in
                                                              enumerate(BAD_RULES)])
def test_check_relabel_rejects(cfg, message):
    with pytest.raises(ValueError) as info:
        check_relabel(cfg, "rc")
    assert str(info.value) == message


@pytest.mark.parametrize("cfg", [
    RelabelConfig(target_label="x"),
    RelabelConfig(target_label="${1}_x"),
    RelabelConfig(action="keep"),
    RelabelConfig(action="drop", source_labels=("a", "b"), regex="x;y"),
    RelabelConfig(action="hashmod", source_labels=("a",), target_label="s", modulus=3),
    RelabelConfig(action="labelmap", regex="__meta_(.+)"),
    RelabelConfig(action="labeldrop", regex="tmp_.*"),
    RelabelConfig(action="labelkeep", regex="job|instance"),
])
def test_check_relabel_accepts(cfg):
    check_relabel(cfg, "rc")
