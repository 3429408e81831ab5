"""`--query.max-bytes` and `--query.max-bytes-tenant` as the querier's flags read them, and the size
a refusal names."""

import argparse

import pytest

from flamewatch.cli import flags
from flamewatch.querier.config import QuerierConfig
from flamewatch.querier.cost import size


def parsed(*argv: str) -> QuerierConfig:
    p = flags.Parser()
    flags.query_limit_flags(p)
    return QuerierConfig(**flags.query_limits(p.parse_args(argv)))


def test_the_limit_is_off_by_default_and_tenants_may_have_their_own():
    config = parsed()
    assert (config.max_bytes, config.max_bytes_of("acme")) == (0, 0)
    config = parsed("--query.max-bytes", "2GiB", "--query.max-bytes-tenant", "acme=0",
                    "--query.max-bytes-tenant", "small=500MB")
    assert [config.max_bytes_of(t) for t in ("other", "acme", "small")] == [2 << 30, 0, 500_000_000]


@pytest.mark.parametrize("text, value", [("0", 0), ("1048576", 1 << 20), ("1.5KiB", 1536), ("2 GB", 2 * 10**9)])
def test_sizes_read_as_bytes(text, value):
    assert flags.byte_size(text) == value


@pytest.mark.parametrize("text", ["ten", "-1", "5 parsecs", "10k"])
def test_a_bad_size_names_what_is_expected(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected"):
        flags.byte_size(text)


def test_a_tenant_override_needs_a_tenant_and_a_size():
    with pytest.raises(SystemExit):
        parsed("--query.max-bytes-tenant", "20GiB")


@pytest.mark.parametrize("n, text", [(512, "512 bytes"), (1536, "1.5 KiB"), (3 << 30, "3 GiB")])
def test_sizes_read_as_people_read_them(n, text):
    assert size(n) == text
