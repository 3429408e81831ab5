"""`Reachability`: one verdict per server, probes at most once per interval while it is down."""

import logging

import pytest

from flamewatch.storage.errors import StorageUnavailable
from flamewatch.storage.reachability import Reachability


class Server:
    """A probe target that answers or not, counting probes, on a clock the test moves."""

    def __init__(self) -> None:
        self.up, self.probes, self.backs, self.now = True, 0, 0, 100.0

    def probe(self) -> None:
        self.probes += 1
        if not self.up:
            raise StorageUnavailable("connection refused")

    def back(self) -> None:
        self.backs += 1


@pytest.fixture
def server() -> Server:
    return Server()


@pytest.fixture
def reach(server: Server) -> Reachability:
    return Reachability("Postgres at db:5432/x", server.probe, server.back, interval_s=0.25, clock=lambda: server.now)


def test_check_costs_nothing_while_the_server_is_taken_to_be_up(server: Server, reach: Reachability) -> None:
    server.up = False  # nobody noticed yet
    reach.check()
    assert server.probes == 0


def test_a_failed_recheck_refuses_later_callers_at_once(server: Server, reach: Reachability) -> None:
    server.up = False
    assert reach.recheck() is False
    for _ in range(5):
        with pytest.raises(StorageUnavailable, match=r"^Postgres at db:5432/x unavailable: connection refused$"):
            reach.check()
    assert server.probes == 1  # the interval has not passed


def test_one_probe_per_interval_while_down_and_recovery_at_the_next(server: Server, reach: Reachability) -> None:
    server.up = False
    reach.recheck()
    server.now += 0.3
    with pytest.raises(StorageUnavailable):
        reach.check()
    assert server.probes == 2
    server.up = True
    with pytest.raises(StorageUnavailable):
        reach.check()  # probed 0 s ago: no new probe yet
    server.now += 0.25
    reach.check()
    assert (server.probes, server.backs, reach.down) == (3, 1, False)
    reach.check()
    assert server.probes == 3


def test_recheck_after_a_connection_error_while_the_server_answers(server: Server, reach: Reachability) -> None:
    assert reach.recheck() is True  # e.g. a restart broke pooled connections but the server is back
    assert (server.probes, server.backs) == (1, 0)


def test_ping_probes_every_time(server: Server, reach: Reachability) -> None:
    reach.ping()
    server.now += 0.01
    reach.ping()
    server.up = False
    server.now += 0.01
    with pytest.raises(StorageUnavailable, match="connection refused"):
        reach.ping()
    assert server.probes == 3


def test_the_outage_and_its_end_are_logged_once(server: Server, reach: Reachability,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="flamewatch.storage.reachability")
    server.up = False
    for _ in range(10):
        server.now += 0.3
        with pytest.raises(StorageUnavailable):
            reach.check() if reach.down else reach.ping()
    server.up = True
    server.now += 0.3
    reach.check()
    assert [r.getMessage() for r in caplog.records] == [
        "Postgres at db:5432/x does not answer (connection refused); refusing requests at once and probing "
        "every 0.25 s",
        "Postgres at db:5432/x answers again after 3.0 s",
    ]
