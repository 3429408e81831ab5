"""Flags can come from FLAMEWATCH_* environment variables, the required ones too."""

import pytest

from flamewatch.cli import build_parser, compactor, flags


def test_a_required_flag_may_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("FLAMEWATCH_CONFIG_FILE", "/etc/flamewatch/scrape.yaml")
    assert build_parser().parse_args(["collector"]).config_file == "/etc/flamewatch/scrape.yaml"


def test_a_required_flag_given_nowhere_is_asked_for(monkeypatch, capsys):
    monkeypatch.delenv("FLAMEWATCH_CONFIG_FILE", raising=False)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["collector"])
    assert "--config.file" in capsys.readouterr().err


STORAGE_FLAGS = ["--data-dir", "/srv/fw", "--storage.s3.bucket", "b", "--storage.s3.endpoint", "minio:9000",
                 "--storage.s3.access-key", "ak", "--storage.s3.secret-key", "sk", "--storage.s3.region", "eu",
                 "--storage.s3.insecure", "--storage.s3.prefix", "p/"]


def test_the_compactor_process_of_all_gets_the_same_storage_through_its_environment(monkeypatch):
    parent = build_parser().parse_args(["all", *STORAGE_FLAGS, "--storage.postgres-dsn", "postgresql://u:pw@h/db"])
    child_env = flags.storage_environment(parent, "postgresql://u:pw@h/db", {"FLAMEWATCH_STORAGE_S3_BUCKET": "other",
                                                                             "PATH": "/bin"})
    assert child_env["PATH"] == "/bin"
    for name, value in child_env.items():
        monkeypatch.setenv(name, value)
    child = build_parser().parse_args(["compactor"])
    assert flags.storage_config(child) == flags.storage_config(parent)


def test_every_storage_flag_is_handed_to_the_compactor_process():
    probe = flags.Parser()
    flags.storage_flags(probe)
    actions = [a for a in probe._actions if a.option_strings and a.dest != "help"]
    assert {a.option_strings[0]: a.dest for a in actions} == flags.STORAGE_DESTS


def test_a_parent_without_an_s3_bucket_hands_over_its_data_directory_and_database(tmp_path):
    parent = build_parser().parse_args(["all", "--data-dir", str(tmp_path)])
    env = flags.storage_environment(parent, "postgresql://postgres:@/postgres?host=/sock", {})
    assert env == {"FLAMEWATCH_DATA_DIR": str(tmp_path), "FLAMEWATCH_STORAGE_POSTGRES_DSN":
                   "postgresql://postgres:@/postgres?host=/sock", "FLAMEWATCH_STORAGE_S3_ENDPOINT": "127.0.0.1:9000"}


@pytest.mark.parametrize(("ns", "text"), [(30 * 86_400 * 10**9, "2592000000ms"), (1_500_001, "1.500001ms")])
def test_a_retention_is_handed_to_the_compactor_as_a_duration_it_reads_back(ns, text):
    from flamewatch.timerange import parse_duration

    assert compactor._duration(ns) == text and parse_duration(text) == ns
