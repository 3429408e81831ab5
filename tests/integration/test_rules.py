"""Rule files: their schema (good and bad files with the YAML path of each problem), and their evaluation
on a real Postgres with stored profiles: a comparison rule records a regression once the new version has
enough data, a recording rule serves function shares as a metric family."""

from __future__ import annotations

import asyncio
import time

import pytest
from integration.test_changes import CPU, TENANT, S, push_version
from integration.test_changes import store as store  # noqa: F401 - the fixture

from flamewatch.configreader import ConfigError
from flamewatch.events.api import Recorder
from flamewatch.querier.blocks import BlockCache
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.engine import Querier
from flamewatch.querier.incidents import Incidents
from flamewatch.querier.paths import PathIndex
from flamewatch.querier.rules import CompareRule, RecordRule, Rules, parse_rules

BASE = (time.time_ns() // S - 7200) * S  # recent: events older than 30 days are refused
RULES = f"""
groups:
  - name: releases
    interval: 30s
    tenant: {TENANT}
    rules:
      - compare: version
        query: '{CPU}{{service_name="api"}}'
        for: 5m
        window: 10m
        threshold: 1%
        labels: {{severity: warning}}
      - record: flamewatch_function_self_ratio
        query: '{CPU}'
        range: 20m
        top: 3
"""


def test_a_good_file_reads_with_its_defaults():
    [group] = parse_rules(RULES)
    compare, record = group.rules
    assert isinstance(compare, CompareRule) and isinstance(record, RecordRule)
    assert (group.interval_s, compare.per, compare.for_s, compare.threshold, compare.order) == \
        (30.0, "service_name", 300.0, 0.01, "self")
    assert (record.by, record.range_s, record.top, record.measure) == (("service_name",), 1200.0, 3, "self")
    assert parse_rules("") == ()


@pytest.mark.parametrize(("text", "problem"), [
    ("groups: [{name: a, rules: [{query: x}]}]", "groups[0].rules[0]: a rule has either compare"),
    ("groups: [{name: a, rules: [{compare: version, record: m, query: x}]}]", "a rule has either compare"),
    ("groups: [{name: a, rules: [{compare: version}]}]", "groups[0].rules[0].query: required"),
    ("groups: [{name: a, rules: [{compare: version, query: '{a=\"b\"}'}]}]", "name the profile type"),
    ("groups: [{name: a, rules: [{compare: bad-label, query: x}]}]", '"bad-label" is not a valid label name'),
    (f"groups: [{{name: a, rules: [{{compare: v, query: '{CPU}', threshold: 150%}}]}}]",
     "threshold: a share is between 0% and 100%"),
    (f"groups: [{{name: a, rules: [{{compare: v, query: '{CPU}', order: median}}]}}]",
     'order: expected self or total, got "median"'),
    (f"groups: [{{name: a, rules: [{{record: 9bad, query: '{CPU}'}}]}}]", '"9bad" is not a valid metric name'),
    (f"groups: [{{name: a, rules: [{{record: m, query: '{CPU}', tops: 3}}]}}]", "tops: unknown field (did you "
     "mean top?)"),
    ("groups: [{name: a}, {name: a}]", 'groups[1].name: "a" is already used by groups[0]'),
    ("groups: [{name: a, interval: soon}]", "groups[0].interval: invalid duration"),
])
def test_a_bad_file_is_refused_with_the_yaml_path(text: str, problem: str):
    with pytest.raises(ConfigError) as refused:
        parse_rules(text)
    assert problem in str(refused.value)


def rules(db, store, now: int, recorded: list) -> Rules:  # noqa: F811
    querier = Querier(db, BlockCache(store, 64 << 20, 2, PathIndex()), QuerierConfig())

    async def record(tenant, events):
        recorded.append((tenant, events))
        return await Recorder(db).record(tenant, events)

    return Rules(querier, lambda: parse_rules(RULES), record, clock=lambda: now)


def evaluate(r: Rules) -> list:
    async def run():
        r._loop = asyncio.get_running_loop()  # as start() does, without starting the periodic tasks
        return await asyncio.to_thread(r.evaluate, r.groups[0])

    return asyncio.run(run())


@pytest.mark.postgres
def test_a_slower_version_becomes_a_regression_once_it_has_enough_data(db, store):  # noqa: F811
    push_version(db, store, "1.0", BASE, {}, seed=1)  # 30 profiles, 10 s apart
    push_version(db, store, "1.1", BASE + 600 * S, {"main.hash": 0.20}, seed=2)
    recorded: list = []
    assert evaluate(rules(db, store, BASE + 700 * S, recorded)) == []  # 1.1 has 100 s of data, not 5 min
    [event] = evaluate(rules(db, store, BASE + 1000 * S, recorded))
    assert event.kind == "regression" and event.labels == {"service_name": "api", "version": "1.1",
                                                           "severity": "warning"}
    assert event.details["functions"][0]["name"] == "main.hash" and event.details["a"]["value"] == "1.0"
    assert event.message.startswith("version 1.1 against 1.0: main.hash +")
    assert len(recorded) == 1
    evaluate(rules(db, store, BASE + 1100 * S, recorded))  # evaluated again: recorded once
    [incident] = Incidents(db).list(TENANT, BASE, BASE + 2000 * S, kinds=("regression",))
    change = incident.evidence.change
    assert change.left.query == f'{CPU}{{service_name="api",version="1.0"}}' and change.right.query.endswith(
        'version="1.1"}')
    assert incident.evidence.notes[0].startswith("main.hash: ")


@pytest.mark.postgres
def test_the_same_program_under_a_new_version_records_nothing(db, store):  # noqa: F811
    push_version(db, store, "1.0", BASE, {}, seed=3)
    push_version(db, store, "1.1", BASE + 600 * S, {}, seed=4)
    assert evaluate(rules(db, store, BASE + 1000 * S, [])) == []


@pytest.mark.postgres
def test_a_recording_rule_serves_the_largest_shares(db, store):  # noqa: F811
    push_version(db, store, "1.0", BASE, {}, seed=5)
    r = rules(db, store, BASE + 300 * S, [])
    evaluate(r)
    [family] = list(r.collect())
    assert family.name == "flamewatch_function_self_ratio"
    by_function = {s.labels["function"]: s.value for s in family.samples}
    assert set(by_function) == {"main.parse", "main.compress", "main.hash"}  # the top 3 by self share
    assert by_function["main.parse"] == pytest.approx(0.3, abs=0.03)
    assert all(s.labels["service_name"] == "api" for s in family.samples)
