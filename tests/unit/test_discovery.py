"""Service discovery: static and file discoverers, the refresh poller, the registry and the manager."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pytest

from flamewatch.collector.config import FileSDConfig, ScrapeConfig, StaticConfig
from flamewatch.collector.discovery.file import FileTargets, file_discoverer
from flamewatch.collector.discovery.manager import DiscoveryManager
from flamewatch.collector.discovery.refresh import RefreshDiscoverer
from flamewatch.collector.discovery.registry import UnknownDiscoveryConfig, discoverers_for
from flamewatch.collector.targetgroup import TargetGroup

FAST = 0.02  # a check interval for tests that do not measure the real one


class Recorder:
    """An `up` callback that keeps every update."""

    def __init__(self) -> None:
        self.updates: list[list[TargetGroup]] = []

    def __call__(self, groups: list[TargetGroup]) -> None:
        self.updates.append(groups)

    @property
    def addresses(self) -> list[str]:
        last = self.updates[-1] if self.updates else []
        return sorted(target["__address__"] for group in last for target in group.targets)


def run(make: Callable[[], Awaitable[None]], timeout: float = 10.0) -> None:
    asyncio.run(asyncio.wait_for(make(), timeout))


async def until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(0.01)


@asynccontextmanager
async def running(coroutine):
    task = asyncio.create_task(coroutine)
    try:
        yield task
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task


def write_json(path: Path, groups: list[dict]) -> None:
    path.write_text(json.dumps(groups))


def group(source: str, *addresses: str, **labels: str) -> TargetGroup:
    return TargetGroup(source, tuple({"__address__": a} for a in addresses), labels)


# Static


def test_static_config_gives_one_group_per_entry():
    scrape_config = ScrapeConfig("demo", static_configs=(
        StaticConfig(targets=("a:6060", "b:6060"), labels={"env": "prod"}),
        StaticConfig(targets=("c:6060",), labels={}),
    ))
    first, second = Recorder(), Recorder()

    async def main():
        one, two = discoverers_for("demo", scrape_config)
        async with running(one.run(first)), running(two.run(second)):
            await until(lambda: first.updates and second.updates)

    run(main)
    assert first.updates == [[group("demo/static/0", "a:6060", "b:6060", env="prod")]]
    assert second.updates == [[group("demo/static/1", "c:6060")]]


# Registry


@dataclass(frozen=True)
class UnregisteredSDConfig:
    address: str = "localhost:1"


def test_registry_rejects_an_unknown_config_type():
    with pytest.raises(UnknownDiscoveryConfig, match=(
            r"^demo: no discoverer for config type 'UnregisteredSDConfig'; known types: FileSDConfig, "
            r"KubernetesSDConfig, StaticConfig$")):
        discoverers_for("demo", [StaticConfig(targets=("a:1",), labels={}), UnregisteredSDConfig()])


def test_registry_reads_every_discovery_field_of_a_scrape_config(tmp_path):
    scrape_config = ScrapeConfig(
        "demo",
        static_configs=(StaticConfig(targets=("a:1",), labels={}),),
        file_sd_configs=(FileSDConfig(files=(str(tmp_path / "*.json"),)), FileSDConfig(files=("x/*.yml",))),
    )
    names = [d.name for d in discoverers_for("demo", scrape_config)]
    assert names == ["demo/static/0", "demo/file/0", "demo/file/1"]


# File


def test_file_sd_reads_json_and_yaml(tmp_path):
    write_json(tmp_path / "a.json", [{"targets": ["a:1", "b:2"], "labels": {"env": "prod"}}])
    (tmp_path / "b.yml").write_text("- targets: [c:3]\n  labels: {team: x, port: 8080}\n- targets: [d:4]\n")
    config = FileSDConfig(files=(str(tmp_path / "*.json"), str(tmp_path / "*.yml")), refresh_interval_s=300)
    up = Recorder()

    async def main():
        async with running(file_discoverer("demo/file/0", config, check_interval_s=FAST).run(up)):
            await until(lambda: up.updates)

    run(main)
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.yml")
    assert up.updates == [[
        group(f"{a}:0", "a:1", "b:2", env="prod", __meta_filepath=a),
        group(f"{b}:0", "c:3", team="x", port="8080", __meta_filepath=b),
        group(f"{b}:1", "d:4", __meta_filepath=b),
    ]]


def test_file_sd_picks_up_a_new_file_without_restart(tmp_path):
    write_json(tmp_path / "a.json", [{"targets": ["a:1"]}])
    scrape_config = ScrapeConfig("demo", file_sd_configs=(FileSDConfig(files=(str(tmp_path / "*.json"),)),))
    up = Recorder()

    async def main():
        (discoverer,) = discoverers_for("demo", scrape_config)  # the real one-second check
        async with running(discoverer.run(up)):
            await until(lambda: up.addresses == ["a:1"])
            write_json(tmp_path / "b.json", [{"targets": ["b:2"]}])
            await until(lambda: up.addresses == ["a:1", "b:2"], timeout=2.5)

    run(main)


def test_file_sd_follows_changes_and_removals(tmp_path):
    write_json(tmp_path / "a.json", [{"targets": ["a:1"]}])
    write_json(tmp_path / "b.json", [{"targets": ["b:1"]}])
    config = FileSDConfig(files=(str(tmp_path / "*.json"),))
    up = Recorder()

    async def main():
        async with running(file_discoverer("demo/file/0", config, check_interval_s=FAST).run(up)):
            await until(lambda: up.addresses == ["a:1", "b:1"])
            write_json(tmp_path / "a.json", [{"targets": ["a:1", "a:2"]}, {"targets": ["a:3"]}])
            await until(lambda: up.addresses == ["a:1", "a:2", "a:3", "b:1"])
            (tmp_path / "b.json").unlink()
            await until(lambda: up.addresses == ["a:1", "a:2", "a:3"])

    run(main)
    assert {g.labels["__meta_filepath"] for g in up.updates[-1]} == {str(tmp_path / "a.json")}


@pytest.mark.parametrize(("name", "broken", "line"), [
    ("a.json", '[{"targets": ["a:2"]},\n {"targets": ["b:2"]\n', 3),
    ("a.yaml", "- targets: [a:2]\n- targets: [b:2\n  labels: {}\n", 3),
])
def test_a_broken_file_keeps_its_previous_targets(tmp_path, caplog, name, broken, line):
    path = tmp_path / name
    path.write_text(json.dumps([{"targets": ["a:1"]}]))
    config = FileSDConfig(files=(str(tmp_path / "a.*"),))
    up = Recorder()

    async def main():
        async with running(file_discoverer("demo/file/0", config, check_interval_s=FAST).run(up)):
            await until(lambda: up.addresses == ["a:1"])
            path.write_text(broken)
            await until(lambda: any(str(path) in r.getMessage() for r in caplog.records))
            await asyncio.sleep(5 * FAST)

    with caplog.at_level(logging.WARNING, logger="flamewatch.collector.discovery"):
        run(main)
    assert up.addresses == ["a:1"]
    assert len(up.updates) == 1
    (record,) = caplog.records  # reported once per change, not on every check
    assert record.levelno == logging.WARNING
    assert f"{path}:{line}:" in record.getMessage()


def test_a_file_with_the_wrong_shape_names_the_entry(tmp_path, caplog):
    path = tmp_path / "a.json"
    write_json(path, [{"targets": ["a:1"]}, {"targets": "b:1"}])
    with caplog.at_level(logging.WARNING):
        assert FileTargets([str(path)], full_every_s=300).scan() == []
    assert f"{path}: [1].targets: must be a list of host:port strings" in caplog.text


def test_unchanged_files_are_read_again_only_on_a_full_refresh(tmp_path, caplog):
    path = tmp_path / "a.json"
    path.write_text("[")
    now = [0.0]
    targets = FileTargets([str(path)], full_every_s=300, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING):
        targets.scan()
        targets.scan()
        assert len(caplog.records) == 1
        now[0] = 301
        targets.scan()
        assert len(caplog.records) == 2


# Refresh


def test_refresh_keeps_the_last_good_groups_on_error(caplog):
    answers: list[object] = [[group("s", "a:1")], RuntimeError("source down"), [group("s", "a:1")],
                             [group("s", "b:1")]]
    up = Recorder()

    async def refresh() -> list[TargetGroup]:
        answer = answers.pop(0) if answers else [group("s", "b:1")]
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def main():
        async with running(RefreshDiscoverer("demo/poll/0", FAST, refresh).run(up)):
            await until(lambda: not answers)
            await asyncio.sleep(3 * FAST)

    with caplog.at_level(logging.WARNING):
        run(main)
    assert up.updates == [[group("s", "a:1")], [group("s", "b:1")]]  # only changes are sent
    assert "demo/poll/0" in caplog.text and "source down" in caplog.text


# Manager


@dataclass(frozen=True)
class BurstConfig:
    count: int


class BurstDiscoverer:
    """Sends `count` updates in quick succession, the last with `count` targets, then waits."""

    def __init__(self, name: str, count: int, starts: list[str]):
        self.name, self.count, self.starts = name, count, starts

    async def run(self, up):
        self.starts.append(self.name)
        for n in range(1, self.count + 1):
            up([group(self.name, *(f"{self.name}:{i}" for i in range(n)))])
            await asyncio.sleep(0.005)
        await asyncio.Event().wait()


def burst_builder(starts: list[str]):
    def build(job_name, configs):
        return [BurstDiscoverer(f"{job_name}/burst/{i}", c.count, starts) for i, c in enumerate(configs)]
    return build


def test_manager_debounces_and_syncs_per_job():
    syncs: list[tuple[str, list[TargetGroup]]] = []
    starts: list[str] = []

    async def main():
        manager = DiscoveryManager(lambda job, groups: syncs.append((job, groups)), debounce_s=0.1,
                                   build=burst_builder(starts))
        manager.apply({"api": [BurstConfig(10), BurstConfig(1)], "db": [BurstConfig(3)]})
        async with running(manager.run()):
            await until(lambda: {job for job, _ in syncs} == {"api", "db"} and len(starts) == 3)
            await asyncio.sleep(0.3)

    run(main)
    assert len(syncs) <= 4  # 14 updates in ~50 ms, sent at most every 100 ms
    last = {job: groups for job, groups in syncs}
    assert [(g.source, len(g.targets)) for g in last["api"]] == [("api/burst/0", 10), ("api/burst/1", 1)]
    assert [(g.source, len(g.targets)) for g in last["db"]] == [("db/burst/0", 3)]


def test_manager_apply_restarts_only_changed_jobs_and_empties_removed_ones():
    syncs: list[tuple[str, list[TargetGroup]]] = []
    starts: list[str] = []

    async def main():
        manager = DiscoveryManager(lambda job, groups: syncs.append((job, groups)), debounce_s=0.02,
                                   build=burst_builder(starts))
        async with running(manager.run()):
            manager.apply({"api": [BurstConfig(1)], "db": [BurstConfig(1)], "web": [BurstConfig(1)]})
            await until(lambda: len(starts) == 3)
            await asyncio.sleep(0.1)
            syncs.clear()
            manager.apply({"api": [BurstConfig(1)], "db": [BurstConfig(2)]})
            await until(lambda: len(starts) == 4)
            await asyncio.sleep(0.1)

    run(main)
    assert sorted(starts) == ["api/burst/0", "db/burst/0", "db/burst/0", "web/burst/0"]
    last = {job: groups for job, groups in syncs}
    assert set(last) == {"db", "web"}
    assert last["web"] == []
    assert [len(g.targets) for g in last["db"]] == [2]


def test_manager_keeps_running_jobs_when_a_reload_is_invalid():
    syncs: list[tuple[str, list[TargetGroup]]] = []

    async def main():
        manager = DiscoveryManager(lambda job, groups: syncs.append((job, groups)), debounce_s=0.02)
        async with running(manager.run()):
            manager.apply({"demo": ScrapeConfig("demo", static_configs=(StaticConfig(targets=("a:1",), labels={}),))})
            await until(lambda: syncs)
            with pytest.raises(UnknownDiscoveryConfig, match="other: no discoverer for config type"):
                manager.apply({"other": [UnregisteredSDConfig()]})
            await asyncio.sleep(0.1)
            assert manager.groups("demo") == [group("demo/static/0", "a:1")]

    run(main)
    assert syncs == [("demo", [group("demo/static/0", "a:1")])]


def test_file_paths_are_reported_as_globbed(tmp_path, monkeypatch):
    # __meta_filepath is the path as the pattern produced it, so relative patterns stay relative.
    write_json(tmp_path / "a.json", [{"targets": ["a:1"]}])
    monkeypatch.chdir(tmp_path)
    (only,) = FileTargets(["*.json"], full_every_s=300).scan()
    assert only.labels["__meta_filepath"] == "a.json"
