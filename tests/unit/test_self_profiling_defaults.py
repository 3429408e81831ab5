"""What each command profiles of itself by default: CPU always, the heap only when asked, because
tracemalloc's bookkeeping on every allocation costs more than the service's own work (see the README)."""

from pathlib import Path

import pytest
import yaml

from flamewatch.cli import build_parser
from flamewatch.clientconfig import TLSConfig
from flamewatch.collector.config import parse_config
from flamewatch.rpc.channels import ClientIdentity
from flamewatch.selfprofile.scrape_config import self_scrape_config

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {"ingester": [], "querier": [], "collector": ["--config.file", "x.yaml"], "frontend": [], "compactor": [],
            "all": []}


@pytest.mark.parametrize("command", COMMANDS)
def test_heap_tracking_is_off_unless_asked(command):
    parse = build_parser().parse_args
    assert parse([command, *COMMANDS[command]]).heap_profiling is False
    assert parse([command, *COMMANDS[command], "--self-profiling.heap"]).heap_profiling is True


@pytest.mark.parametrize("heap", [False, True])
def test_the_built_in_self_scrape_asks_for_the_heap_only_when_it_is_tracked(heap):
    config = parse_config(self_scrape_config("127.0.0.1:8080", heap, ClientIdentity()), "built-in")
    endpoints = config.scrape_configs[0].profiling_config.endpoints()
    assert sorted(endpoints) == (["memory", "process_cpu"] if heap else ["process_cpu"])
    job = config.scrape_configs[0]
    assert (job.authorization, job.scheme, job.tls_config) == (None, "http", None)


def test_the_self_scrape_shows_the_process_s_credential_and_uses_its_tls():
    tls = TLSConfig(ca_file="/etc/fw/ca.crt", cert_file="/etc/fw/all.crt", key_file="/etc/fw/all.key",
                    server_name="flamewatch.internal")
    text = self_scrape_config("127.0.0.1:8080", False, ClientIdentity("Bearer s3cret", tls))
    job = parse_config(text, "built-in").scrape_configs[0]
    assert (job.scheme, job.tls_config) == ("https", tls)
    assert (job.authorization.type, job.authorization.credentials) == ("Bearer", "s3cret")


def test_make_run_does_not_scrape_a_heap_flamewatch_does_not_track():
    jobs = {j["job_name"]: j for j in yaml.safe_load((ROOT / "examples" / "flamewatch.yaml").read_text())
            ["scrape_configs"]}
    assert jobs["flamewatch"]["profiling_config"]["pprof_config"]["memory"]["enabled"] is False
    assert "profiling_config" not in jobs["demo"], "the demo keeps every Go profile type"
