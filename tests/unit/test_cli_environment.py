"""Flags can come from FLAMEWATCH_* environment variables, the required ones too."""

import pytest

from flamewatch.cli import build_parser


def test_a_required_flag_may_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("FLAMEWATCH_CONFIG_FILE", "/etc/flamewatch/scrape.yaml")
    assert build_parser().parse_args(["collector"]).config_file == "/etc/flamewatch/scrape.yaml"


def test_a_required_flag_given_nowhere_is_asked_for(monkeypatch, capsys):
    monkeypatch.delenv("FLAMEWATCH_CONFIG_FILE", raising=False)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["collector"])
    assert "--config.file" in capsys.readouterr().err
