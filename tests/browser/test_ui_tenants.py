"""The tenant picker: `flamewatch all` behind a web configuration file, holding a CPU profile of its own
in each of team-a and team-b (a function named after the tenant), opened in Chromium as a user who may
read both and as one who may read team-a only.

The picker lists the tenants `GET /api/v1/tenants` gives the user; the picked one is sent as
X-Scope-OrgID on every call, kept in the URL (so a reload and a permalink keep it), and a tenant the
user may not read gets the server's refusal on the page.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from browser.conftest import SCREENSHOTS, Served, open_page, secured_flamewatch
from e2e.credentials import Credential, write_web_config
from infra.tinypprof import tiny_pprof
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres]

FUNCTIONS = {"team-a": "shop.checkout", "team-b": "billing.invoice"}
BOTH = Credential("both", "both-password", read=("team-a", "team-b"))
ONE = Credential("one", "one-password", read=("team-a",))
PUSHER = Credential("pusher", "pusher-token-0123456789abcdef", write=("team-a", "team-b"), bearer=True)


@pytest.fixture(scope="module")
def two_tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    workdir = tmp_path_factory.mktemp("flamewatch-ui-tenants")
    with secured_flamewatch(workdir, write_web_config(workdir / "web.yml", BOTH, ONE, PUSHER)) as url:
        for tenant, function in FUNCTIONS.items():
            r = httpx.post(f"{url}/ingest", params={"service_name": tenant.replace("team", "svc")},
                           content=tiny_pprof(time.time_ns(), function=function), headers=PUSHER.headers(tenant),
                           timeout=30)
            assert r.status_code == 200, r.text
        yield Served(url, 0)


def as_user(chromium, request: pytest.FixtureRequest, user: Credential):
    return open_page(chromium, request.node.name, http_credentials={"username": user.name, "password": user.secret})


def shown_functions(page) -> list[str]:
    rows = page.locator("[data-testid=top-table] tbody td.fn")
    rows.first.wait_for()
    return [name.strip() for name in rows.all_inner_texts()]


def expect_functions_of(page, tenant: str) -> None:
    """The top table shows the tenant's function, and the other tenant's never."""
    rows = page.locator("[data-testid=top-table] tbody td.fn")
    expect(rows.filter(has_text=FUNCTIONS[tenant])).to_have_count(1)
    others = [f for t, f in FUNCTIONS.items() if t != tenant]
    assert not set(others) & set(shown_functions(page)), shown_functions(page)


def test_a_user_of_two_tenants_picks_each_and_a_reload_keeps_the_choice(two_tenants: Served, chromium, request):
    with as_user(chromium, request, BOTH) as page:
        page.goto(two_tenants.url + "/")
        picker = page.get_by_label("tenant")
        expect(picker).to_have_value("team-a")  # the first the user may read: the default
        assert picker.locator("option").all_inner_texts() == ["team-a", "team-b"]
        expect_functions_of(page, "team-a")

        picker.select_option("team-b")
        page.wait_for_url(lambda u: "tenant=team-b" in u)
        expect(page.locator("#selector")).to_have_value('{service_name="svc-b"}')  # team-b's service, picked anew
        expect_functions_of(page, "team-b")

        page.reload()
        expect(page.get_by_label("tenant")).to_have_value("team-b")
        expect_functions_of(page, "team-b")

        page.get_by_label("tenant").select_option("team-a")
        page.wait_for_url(lambda u: "tenant=team-a" in u)
        expect_functions_of(page, "team-a")
        page.go_back()  # the last tenant is a history entry
        expect(page.get_by_label("tenant")).to_have_value("team-b")
        expect_functions_of(page, "team-b")


def test_a_user_of_one_tenant_gets_no_choice_and_only_its_data(two_tenants: Served, chromium, request):
    with as_user(chromium, request, ONE) as page:
        page.goto(two_tenants.url + "/")
        expect_functions_of(page, "team-a")
        expect(page.get_by_label("tenant")).to_have_count(0)


def test_a_tenant_the_user_may_not_read_shows_the_refusal(two_tenants: Served, chromium, request):
    with as_user(chromium, request, ONE) as page:
        page.goto(two_tenants.url + "/?tenant=team-b")
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("Tenant “team-b” could not be read")
        expect(alert).to_contain_text("one may not read tenant 'team-b'; it may read 'team-a'")
        page.screenshot(path=str(SCREENSHOTS / "tenant_refused.png"))
        # The picker stays, so the user can go back to a tenant of theirs.
        picker = page.get_by_label("tenant")
        assert picker.locator("option").all_inner_texts() == ["team-b (not listed)", "team-a"]
        picker.select_option("team-a")
        expect_functions_of(page, "team-a")
