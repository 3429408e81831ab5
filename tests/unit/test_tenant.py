"""Tenant ids from the X-Scope-OrgID header or gRPC metadata, one or (for a read) several joined by "|"."""

import pytest

from flamewatch.rpc.tenant import DEFAULT_TENANT, joined, resolve_tenant, resolve_tenants, tenant_ids

RULE = 'use 1-64 characters of letters, digits, "_", "." or "-"'


VALID = [(None, DEFAULT_TENANT), ("", DEFAULT_TENANT), ("team-a.prod_1", "team-a.prod_1"), ("x" * 64, "x" * 64),
         ("...", "...")]


@pytest.mark.parametrize(("value", "tenant"), VALID)
def test_valid_tenants(value, tenant):
    assert resolve_tenant(value) == tenant


# "a\n" passed `^...$` (which matches before a final newline); gRPC metadata can carry it.
@pytest.mark.parametrize("value", [".", "..", "x" * 65, "a b", "a/b", "a\n", "\na", "é"])
def test_invalid_tenants_name_the_rule(value):
    with pytest.raises(ValueError) as caught:
        resolve_tenant(value)
    assert str(caught.value) == f'invalid tenant "{value}": {RULE}'


# As dskit's tenant.TenantIDs, which Pyroscope's v2 read path calls: split on "|", deduplicated, sorted.
@pytest.mark.parametrize(("value", "tenants"), [
    (None, ()), ("", ()),  # none named: the credential's default applies
    ("team-a", ("team-a",)),
    ("team-b|team-a", ("team-a", "team-b")),  # sorted, so "b|a" and "a|b" are one read
    ("b|a|b|a", ("a", "b")),  # each once
    ("a|a", ("a",)),  # a read of one tenant
    ("z|" + "x" * 64 + "|...", ("...", "x" * 64, "z")),
])
def test_a_read_names_its_tenants_sorted_and_once_each(value, tenants):
    assert resolve_tenants(value) == tenants


@pytest.mark.parametrize("value", ["a||b", "|a", "a|", "|", "||"])
def test_an_empty_tenant_in_the_list_is_refused(value):
    with pytest.raises(ValueError) as caught:
        resolve_tenants(value)
    assert str(caught.value) == (f'X-Scope-OrgID "{value}" holds an empty tenant id: separate tenants with one "|", '
                                 "e.g. team-a|team-b")


@pytest.mark.parametrize(("value", "bad"), [("team-a|team b", "team b"), ("..|a", ".."), ("a|.", "."),
                                            ("a|" + "x" * 65, "x" * 65), ("a|b/c|d", "b/c"), ("a|b\n", "b\n")])
def test_an_invalid_tenant_in_the_list_is_named(value, bad):
    with pytest.raises(ValueError) as caught:
        resolve_tenants(value)
    assert str(caught.value) == f'invalid tenant "{bad}": {RULE}'


def test_one_tenant_or_several_as_a_tuple_and_as_the_header_names_them():
    assert tenant_ids("team-a") == ("team-a",)  # a str is one tenant, not its characters
    assert tenant_ids(("a", "b")) == ("a", "b")
    assert (joined("team-a"), joined(("a", "b"))) == ("team-a", "a|b")
