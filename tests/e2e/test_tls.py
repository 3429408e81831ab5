"""TLS everywhere, against the real services: split mode with mTLS between every pair (collector ->
ingester, querier -> symbolizer, frontend -> querier and collector) scraping a real Go program; clients
without a certificate, or with one `access` does not list, refused; certificates replaced while pushes
continue, with no push refused; and `flamewatch all` over HTTPS and gRPC over TLS, scraping itself.

Every service requires and verifies client certificates (RequireAndVerifyClientCert) from the test's
own CA (`e2e.tls`) and lets the others in by their certificate's common name; the test is "tester".
"""

from __future__ import annotations

import gzip
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from e2e.allinone import stop
from e2e.cluster import FLAMEWATCH, FLUSH_INTERVAL_S, Service, Storage, running_services
from e2e.tls import PKI, served_serial
from infra.ports import free_port
from infra.stringtable import interner
from infra.tinypprof import tiny_pprof
from infra.waiting import wait_for

from flamewatch.api.flamewatch.v1 import ingest_pb2, ingest_pb2_grpc, types_pb2
from flamewatch.api.perftools.profiles import profile_pb2

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.s3, pytest.mark.go]

TENANT = "tls"
CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
SCRAPE = """
scrape_configs:
  - job_name: workload
    scrape_interval: 2s
    static_configs: [{{targets: ["{target}"], labels: {{service_name: workload}}}}]
"""


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return PKI.create(tmp_path_factory.mktemp("pki"))


class Stack:
    """Ingester, symbolizer and querier, each serving HTTPS and gRPC over TLS from its web configuration."""

    def __init__(self, storage: Storage, pki: PKI, workdir: Path) -> None:
        self.pki = pki

        def service(command: str, caller: str, *flags: str) -> Service:
            return Service(command, command, storage, workdir / f"{command}.log",
                           ("--web.config.file", str(pki.web_config(caller)), *flags), tls=pki.client_context())

        self.ingester = service("ingester", "ingester", "--flush-interval", str(FLUSH_INTERVAL_S),
                                "--compaction.interval", "0")
        self.symbolizer = service("symbolizer", "symbolizer")
        self.querier = service("querier", "querier", "--symbolizer.address", self.symbolizer.grpc_address)
        self.http = httpx.Client(verify=pki.client_context(), timeout=60)

    def services(self) -> list[Service]:
        return [self.ingester, self.symbolizer, self.querier]

    def ingest_stub(self, caller: str | None = "tester", service: Service | None = None):
        channel = grpc.secure_channel((service or self.ingester).grpc_address, self.pki.grpc_credentials(caller))
        return channel, ingest_pb2_grpc.IngestServiceStub(channel)


@pytest.fixture(scope="module")
def stack(e2e_storage: Storage, pki: PKI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    s = Stack(e2e_storage, pki, tmp_path_factory.mktemp("tls-stack"))
    with s.http, running_services(*s.services()):
        yield s


def unsymbolized_pprof() -> bytes:
    """One sample at a bare address in an object with a build ID: the querier asks the symbolizer for it."""
    profile = profile_pb2.Profile(time_nanos=time.time_ns(), duration_nanos=10**9, period=10_000_000)
    string = interner(profile)
    profile.string_table.append("")
    profile.sample_type.add(type=string("cpu"), unit=string("nanoseconds"))
    profile.period_type.type, profile.period_type.unit = string("cpu"), string("nanoseconds")
    profile.mapping.add(id=1, memory_start=0x400000, memory_limit=0x500000, filename=string("/usr/bin/tls-test"),
                        build_id=string("0123456789abcdef0123456789abcdef01234567"))
    profile.location.add(id=1, mapping_id=1, address=0x401234)
    profile.sample.add(location_id=[1], value=[10_000_000])
    return gzip.compress(profile.SerializeToString())


def test_split_services_call_each_other_with_mtls(stack: Stack, pki: PKI, go_target: str, tmp_path: Path):
    config = tmp_path / "collector.yaml"
    config.write_text(SCRAPE.format(target=go_target))
    tester = pki.client_context()
    collector = Service("collector", "collector", None, tmp_path / "collector.log", (
        "--config.file", str(config), "--ingester.address", stack.ingester.grpc_address, "--tenant", TENANT,
        "--web.config.file", str(pki.web_config("collector"))), tls=tester, storage_flagged=False)
    frontend = Service("frontend", "frontend", None, tmp_path / "frontend.log", (
        "--querier.url", stack.querier.url, "--collector.url", f"{collector.url},{collector.url}",
        "--web.config.file", str(pki.web_config("frontend"))), tls=tester, grpc=False, storage_flagged=False)
    with running_services(collector, frontend):
        _check_the_whole_path(stack, frontend)

    profile = tmp_path / "cpu.pb.gz"  # our CLI with --tls.* over HTTPS, as a user uploads a file
    profile.write_bytes(tiny_pprof(time.time_ns()))
    uploaded = subprocess.run([str(FLAMEWATCH), "upload", str(profile), "--url", stack.ingester.url, "--tenant",
                               TENANT, "--name", "process_cpu", "--tls.ca-file", str(pki.ca.cert), "--tls.cert-file",
                               str(pki.directory / "tester.crt"), "--tls.key-file", str(pki.directory / "tester.key")],
                              capture_output=True, text=True, timeout=120)
    assert (uploaded.returncode, uploaded.stderr) == (0, ""), uploaded.stdout


def _check_the_whole_path(stack: Stack, frontend: Service) -> None:
    api, tenant = f"{frontend.url}/api/v1", {"X-Scope-OrgID": TENANT}

    def stored_cpu() -> bool:  # collector -> ingester (gRPC), frontend -> querier (HTTPS), both by certificate
        answer = stack.http.get(f"{api}/profile_types", params={"from": "now-5m"}, headers=tenant)
        return answer.status_code == 200 and CPU in {t["id"] for t in answer.json()["data"]}

    wait_for(stored_cpu, 60, "a scraped CPU profile to be stored and listed through the frontend")
    top = stack.http.get(f"{api}/query", headers=tenant, params={
        "query": CPU + '{service_name="workload"}', "from": "now-5m", "format": "top", "max_nodes": "10000"})
    assert "main.cpuFibonacci" in {e["name"] for e in top.json()["top"]["entries"]}, top.text

    # frontend -> each collector shard (HTTPS, by certificate), the tester's tenant header passed on
    targets = stack.http.get(f"{api}/targets", headers=tenant).json()
    assert "warnings" not in targets, targets
    assert {t["health"] for t in targets["data"]["activeTargets"]} <= {"up", "unknown"}

    # querier -> symbolizer (gRPC, by certificate): it answers that it has nothing for the build ID
    push = stack.http.post(f"{stack.ingester.url}/ingest", params={"__name__": "process_cpu", "service_name": "bare"},
                           content=unsymbolized_pprof(), headers=tenant)
    assert push.status_code == 200, push.text
    answer = stack.http.get(f"{stack.querier.url}/api/v1/query", headers=tenant, params={
        "query": CPU + '{service_name="bare"}', "from": "now-5m", "format": "top"}).json()
    assert any("no debug information names them" in w for w in answer.get("warnings", [])), answer
    assert not any("unavailable" in w for w in answer.get("warnings", [])), answer


def _grpc_push(stub, labels: dict[str, str], timeout: float = 30) -> ingest_pb2.PushResponse:
    series = ingest_pb2.RawProfileSeries(labels=[types_pb2.LabelPair(name=k, value=v) for k, v in labels.items()],
                                         samples=[ingest_pb2.RawSample(id="1", raw_profile=tiny_pprof(time.time_ns()))])
    return stub.Push(ingest_pb2.PushRequest(series=[series]), metadata=(("x-scope-orgid", TENANT),), timeout=timeout)


def test_clients_without_an_accepted_certificate_are_refused(stack: Stack, pki: PKI, tmp_path: Path):
    url = f"{stack.querier.url}/api/v1/labels"
    for name, context in {"no certificate": pki.client_context(None),
                          "another CA's certificate": _foreign_context(pki, tmp_path)}.items():
        with pytest.raises((httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError)), \
                httpx.Client(verify=context) as client:
            client.get(url).raise_for_status()
            pytest.fail(f"a client with {name} was let in")
    with httpx.Client(verify=pki.client_context("stranger")) as client:
        refused = client.get(url)
    assert (refused.status_code, refused.json()) == (
        401, {"error": "client certificate 'stranger' is not in the web configuration's access"})

    for caller, code in ((None, grpc.StatusCode.UNAVAILABLE), ("stranger", grpc.StatusCode.UNAUTHENTICATED)):
        channel, stub = stack.ingest_stub(caller)
        with channel, pytest.raises(grpc.RpcError) as info:
            _grpc_push(stub, {"__name__": "process_cpu", "service_name": "refused"}, timeout=10)
        assert info.value.code() == code, info.value
    with httpx.Client(verify=pki.client_context()) as client:  # the tester's own certificate is let in
        assert client.get(url).status_code == 200

    plain = httpx.get(url.replace("https://", "http://"))
    assert (plain.status_code, plain.text.split(":")[0]) == (400, "This port speaks HTTPS")
    log = stack.querier.log_text()
    assert "sent plain HTTP to this HTTPS port: it was told to use https://" in log
    assert "the client showed no certificate; tls_server_config.client_auth_type requires one" in log, log


def _foreign_context(pki: PKI, tmp_path: Path) -> ssl.SSLContext:
    from infra.certs import CertificateAuthority

    foreign = CertificateAuthority.create(tmp_path / "foreign", "foreign-ca").issue("tester", client=True)
    context = ssl.create_default_context(cafile=str(pki.ca.cert))
    context.load_cert_chain(foreign.cert, foreign.key)
    return context


def test_certificates_replaced_while_pushes_continue_refuse_no_push(stack: Stack, pki: PKI, tmp_path: Path):
    """An ingester of its own, serving certificate files that are replaced (renamed over, as a secret
    mount does) while two clients push over new connections, gRPC and HTTPS, as fast as they are answered."""
    pki.ca.issue("server", file_name="rotating")
    ingester = Service("ingester", "rotating-ingester", stack.ingester.storage, tmp_path / "ingester.log",
                       ("--web.config.file", str(pki.web_config("ingester", server="rotating")), "--flush-interval",
                        str(FLUSH_INTERVAL_S), "--compaction.interval", "0"), tls=pki.client_context())
    with running_services(ingester):
        before = served_serial(ingester.http_port, pki.ca.cert)
        assert served_serial(ingester.grpc_port, pki.ca.cert, alpn="h2") == before
        pushes = _Pushes(stack, pki, ingester)
        pushes.start()
        try:
            wait_for(lambda: pushes.done >= 10, 30, "the first pushes")
            after = pki.ca.issue("server", file_name="rotating").serial
            wait_for(lambda: served_serial(ingester.http_port, pki.ca.cert) == after, 30,
                     "HTTPS to serve the new certificate")
            wait_for(lambda: served_serial(ingester.grpc_port, pki.ca.cert, alpn="h2") == after, 30,
                     "gRPC to serve the new certificate")
            settled = pushes.done
            wait_for(lambda: pushes.done >= settled + 10, 30, "pushes on the new certificate")
        finally:
            pushes.stop()
        assert pushes.failures == [], pushes.failures[:5]
        assert ingester.log_text().count("TLS: loaded new certificates") == 1, ingester.log_text()


class _Pushes:
    """Two threads pushing until stopped, each push on a new connection (so each has a handshake)."""

    def __init__(self, stack: Stack, pki: PKI, ingester: Service) -> None:
        self.stack, self.pki, self.ingester = stack, pki, ingester
        self.done = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(push,)) for push in (self._grpc, self._https)]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def _run(self, push) -> None:
        while not self._stop.is_set():
            try:
                push()
                self.done += 1
            except Exception as exc:  # every failure is the finding: recorded, the pushes go on
                self.failures.append(f"{push.__name__}: {exc!r}")

    def _grpc(self) -> None:
        channel, stub = self.stack.ingest_stub(service=self.ingester)
        with channel:
            assert _grpc_push(stub, {"__name__": "process_cpu", "service_name": "rotation-grpc"}).profiles == 1

    def _https(self) -> None:
        with httpx.Client(verify=self.pki.client_context(), timeout=30) as client:
            answer = client.post(f"{self.ingester.url}/ingest", content=tiny_pprof(time.time_ns()),
                                 params={"__name__": "process_cpu", "service_name": "rotation-https"},
                                 headers={"X-Scope-OrgID": TENANT})
        assert answer.status_code == 200, answer.text


def test_flamewatch_all_serves_https_and_grpc_over_tls_and_scrapes_itself(pki: PKI, embedded_workdir: Path):
    http_port, grpc_port = free_port(), free_port()
    log = embedded_workdir / "all.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [str(FLAMEWATCH), "all", "--web.config.file", str(pki.web_config("all")),
             "--http-address", f"127.0.0.1:{http_port}", "--grpc-address", f"127.0.0.1:{grpc_port}"],
            cwd=embedded_workdir, stdout=out, stderr=subprocess.STDOUT)
    url, tenant = f"https://127.0.0.1:{http_port}", {"X-Scope-OrgID": TENANT}
    try:
        with httpx.Client(verify=pki.client_context(), timeout=60) as client:
            wait_for(lambda: client.get(f"{url}/readyz").status_code == 200, 60, "flamewatch all to be ready", log,
                     process)
            pushed = client.post(f"{url}/ingest", params={"__name__": "process_cpu", "service_name": "over-https"},
                                 content=tiny_pprof(time.time_ns()), headers=tenant)
            assert pushed.status_code == 200, pushed.text
            with grpc.secure_channel(f"127.0.0.1:{grpc_port}", pki.grpc_credentials()) as channel:
                assert _grpc_push(ingest_pb2_grpc.IngestServiceStub(channel),
                                  {"__name__": "process_cpu", "service_name": "over-grpc"}).profiles == 1

            def services() -> set[str]:
                answer = client.get(f"{url}/api/v1/label/service_name/values", headers=tenant,
                                    params={"from": "now-5m"})
                return set(answer.json()["data"]) if answer.status_code == 200 else set()

            wait_for(lambda: services() >= {"over-https", "over-grpc"}, 30, "both pushes to be queryable", log)

            def self_scrape_up() -> bool:  # the collector scraped this process over https, with its token
                targets = client.get(f"{url}/api/v1/targets").json()["data"]["activeTargets"]
                return any(t["scrapeUrl"].startswith("https://") and t["health"] == "up" for t in targets)

            wait_for(self_scrape_up, 60, "the self-scrape over https to succeed", log, process)
    finally:
        assert stop(process) == 0, log.read_text()
