"""Tenant ids from the X-Scope-OrgID header or gRPC metadata."""

import pytest

from flamewatch.rpc.tenant import DEFAULT_TENANT, resolve_tenant

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
