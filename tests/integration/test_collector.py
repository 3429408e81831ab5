"""Discovery and the scrape manager against real Go targets: every default profile type arrives with
the right labels and profile type ids, and file discovery adds a target without a restart."""

import asyncio
import json
from collections import defaultdict

import pytest
from infra import gotargets

from flamewatch.collector.config import parse_config
from flamewatch.collector.discovery.manager import DiscoveryManager
from flamewatch.collector.manager import ScrapeManager
from flamewatch.pprof import decode, split

CONFIG = """
scrape_configs:
  - job_name: demo
    scrape_interval: 2s
    static_configs: [{{targets: ["{static}"], labels: {{env: test}}}}]
    file_sd_configs: [{{files: ["{sd_dir}/*.json"]}}]
    relabel_configs:
      - {{source_labels: [env], target_label: environment}}
      - {{source_labels: [__meta_filepath], regex: ".+", target_label: from_file, replacement: "yes"}}
"""

EXPECTED_TYPES = {
    "process_cpu": {"process_cpu:samples:count:cpu:nanoseconds", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"},
    "memory": {"memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
               "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"},
    "goroutine": {"goroutine:goroutine:count:goroutine:count"},
    "mutex": {"mutex:contentions:count:contentions:count", "mutex:delay:nanoseconds:contentions:count"},
    "block": {"block:contentions:count:contentions:count", "block:delay:nanoseconds:contentions:count"},
}


async def collect(config, seconds: float, during=None):
    delivered = []
    scrapes = ScrapeManager(lambda labels, raw: delivered.append((labels, raw)))
    discovery = DiscoveryManager(scrapes.sync)
    jobs = {j.job_name: j for j in config.scrape_configs}
    scrapes.apply(jobs)
    discovery.apply(jobs)
    task = asyncio.create_task(discovery.run())
    try:
        if during:
            await asyncio.sleep(seconds / 2)
            during()
            await asyncio.sleep(seconds / 2)
        else:
            await asyncio.sleep(seconds)
        # On a loaded machine a target's first scrape may still be running: give it as long again.
        deadline = asyncio.get_running_loop().time() + seconds
        while any(s.health.health != "up" for s in scrapes.status()) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
        return delivered, scrapes.status()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scrapes.close()


@pytest.mark.go
def test_every_default_profile_type_arrives_with_its_labels_and_new_file_targets_join(go_target, tmp_path):
    sd_dir = tmp_path / "sd"
    sd_dir.mkdir()
    second = gotargets.GoTarget(gotargets.build("workload"), tmp_path / "second.log")
    second.start()
    try:
        config = parse_config(CONFIG.format(static=go_target, sd_dir=sd_dir))

        def add_file_target():
            (sd_dir / "more.json").write_text(json.dumps([{"targets": [second.addr], "labels": {"env": "file"}}]))

        delivered, status = asyncio.run(collect(config, 9.0, during=add_file_target))
    finally:
        second.stop()

    by_instance = defaultdict(lambda: defaultdict(list))
    for labels, raw in delivered:
        by_instance[labels["instance"]][labels["__name__"]].append((labels, raw))
    first = by_instance[go_target]
    assert set(first) == set(EXPECTED_TYPES)
    for name, items in first.items():
        for labels, raw in items:
            assert labels == {"__name__": name, "job": "demo", "instance": go_target, "service_name": "demo",
                              "env": "test", "environment": "test"}
            assert {t.profile_type.id for t in split(decode(raw), name)} == EXPECTED_TYPES[name]
    joined = by_instance[second.addr]
    assert "goroutine" in joined  # gauges arrive from the first scrape of the new target
    labels = joined["goroutine"][0][0]
    assert (labels["env"], labels["from_file"]) == ("file", "yes")

    health = {(s.target.labels["instance"], s.target.profile_name): s.health for s in status}
    assert len(health) == 2 * len(EXPECTED_TYPES)
    assert all(h.health == "up" for h in health.values()), health
