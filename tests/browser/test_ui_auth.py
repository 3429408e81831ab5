"""The web UI behind basic auth: `flamewatch all` with a web configuration file (tests/e2e/credentials.py),
opened in Chromium with a user's HTTP credentials (Playwright's `http_credentials`, answered to the
server's Basic challenge as a person answers the browser's password dialog).

The page shows what the user's tenant holds and nothing of another tenant's; without credentials, or
with a wrong password, the page is the server's 401 with its Basic challenge.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from browser.conftest import HOT_FUNCTION, Served, open_page, secured_flamewatch
from e2e.credentials import ALICE, CI, EVERYONE, write_web_config
from playwright.sync_api import Error as PlaywrightError

pytestmark = [pytest.mark.browser, pytest.mark.e2e, pytest.mark.postgres, pytest.mark.go]

CHALLENGE = 'Basic realm="flamewatch", charset="UTF-8"'


@pytest.fixture(scope="module")
def secured_ui(go_profiles: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`flamewatch all` behind a web configuration, holding the Go workload's CPU profile in alice's tenant
    (team-a) and its heap profile in team-b, which alice may read too but does not see by default."""
    workdir = tmp_path_factory.mktemp("flamewatch-ui-auth")
    with secured_flamewatch(workdir, write_web_config(workdir / "web.yml", *EVERYONE)) as url:
        for credential, tenant, profile in ((ALICE, "team-a", "cpu"), (CI, "team-b", "heap")):
            r = httpx.post(f"{url}/ingest", params={"service_name": "demo"}, content=go_profiles[profile],
                           headers=credential.headers(tenant), timeout=30)
            assert r.status_code == 200, r.text
        yield Served(url, 0)


@pytest.fixture
def alice_page(chromium, request: pytest.FixtureRequest) -> Iterator[object]:
    with open_page(chromium, request.node.name,
                   http_credentials={"username": ALICE.name, "password": ALICE.secret}) as page:
        yield page


def test_a_user_with_http_credentials_sees_the_flamegraph_of_their_tenant(secured_ui: Served, alice_page):
    alice_page.goto(secured_ui.url + "/")
    alice_page.locator("[data-testid=flamegraph-panel] canvas").first.wait_for()
    rows = alice_page.locator("[data-testid=top-table] tbody td.fn")
    rows.first.wait_for()
    assert HOT_FUNCTION in [name.strip() for name in rows.all_inner_texts()]
    # The profile types are team-a's: the heap profile is in team-b only.
    options = alice_page.get_by_label("profile type").locator("option").all_inner_texts()
    assert "CPU" in options and not [o for o in options if o.startswith("Memory")], options


def test_without_credentials_the_browser_is_asked_for_a_password(secured_ui: Served, page):
    """The 401 carries the Basic challenge, so a person gets the browser's password dialog; headless
    Chromium has no one to ask and stops the navigation there."""
    answered = []
    page.on("response", lambda response: answered.append(response))
    with pytest.raises(PlaywrightError, match="ERR_INVALID_AUTH_CREDENTIALS"):
        page.goto(secured_ui.url + "/")
    assert [(r.status, r.headers.get("www-authenticate")) for r in answered] == [(401, CHALLENGE)]


def test_a_wrong_password_gets_the_401_page_with_the_challenge(secured_ui: Served, chromium,
                                                              request: pytest.FixtureRequest):
    """Chromium answers the challenge once with the password it was given; refused again, it shows the 401."""
    wrong = {"username": ALICE.name, "password": "not-her-password"}
    with open_page(chromium, request.node.name, http_credentials=wrong) as page:
        response = page.goto(secured_ui.url + "/")
        assert (response.status, response.headers["www-authenticate"]) == (401, CHALLENGE)
        assert "wrong user or password (user 'alice')" in page.inner_text("body")
