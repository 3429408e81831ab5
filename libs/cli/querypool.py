"""`flamewatch all`'s query workers: `flamewatch querier` processes beside it that take pieces of long merges.

One Python process merges on one core at a time. So that a month's flamegraph uses the machine's other
cores too, `flamewatch all` hands pieces of its long merges (cut by time) to worker queriers over gRPC, as a querier
replica would (`flamewatch.querier.fanout`). The workers are started at the first merge long enough to
split (so a laptop that never asks one pays nothing for them), serve on loopback, read the same storage
(the embedded database through its socket), and stop after `IDLE_S` without a long merge, or when
`flamewatch all` is gone. A merge asked while they start is read by `all` alone.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import subprocess
import sys
import threading
import time

from flamewatch.cli import flags

log = logging.getLogger(__name__)

IDLE_S = 300.0
START_TIMEOUT_S = 60.0
RESTART_S = 30.0  # after a worker failed to start or died: the next try no sooner
STOP_TIMEOUT_S = 5.0


def default_workers() -> int:
    """One worker per core beyond the first, at most 3."""
    return max(0, min(3, (os.cpu_count() or 1) - 1))


class QueryWorkers:
    """The workers' gRPC addresses as `Peers` asks for them: [] until they are ready (asking starts them)."""

    def __init__(self, count: int, args: argparse.Namespace, postgres_dsn: str, symbolizer_address: str,
                 cache_bytes: int) -> None:
        self.count = count
        self._args, self._dsn = args, postgres_dsn
        self._symbolizer, self._cache_bytes = symbolizer_address, cache_bytes
        self._lock = threading.Lock()
        self._workers: list[tuple[subprocess.Popen, str]] = []
        self._ready: list[str] = []
        self._asked = 0.0
        self._next_start = 0.0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            self._asked = now
            if self.count and self._thread is None and now >= self._next_start and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._run, name="query-workers", daemon=True)
                self._thread.start()
            return list(self._ready)

    def stop(self) -> None:
        self._stopping.set()
        thread = self._thread
        if thread is not None:
            thread.join(STOP_TIMEOUT_S + 5)
        self._stop_workers()

    def _run(self) -> None:
        """Start the workers, wait until they answer, then watch them until idle, dead or stopped."""
        try:
            started = [self._start() for _ in range(self.count)]
            with self._lock:
                self._workers = started
            for process, address in started:
                self._wait_ready(process, address)
            with self._lock:
                self._ready = [address for _, address in started]
            log.info("query workers: %d started (pids %s) to take pieces of long merges; they stop after %.0f s "
                     "without one", len(started), ", ".join(str(p.pid) for p, _ in started), IDLE_S)
            while not self._stopping.wait(5.0):
                dead = [p for p, _ in started if p.poll() is not None]
                if dead:
                    raise RuntimeError(f"worker pid {dead[0].pid} exited with {dead[0].returncode}")
                if time.monotonic() - self._asked > IDLE_S:
                    log.info("query workers: no long merge for %.0f s; stopping them", IDLE_S)
                    break
        except Exception as exc:  # noqa: BLE001 - a worker that fails leaves `all` merging alone, never down
            log.warning("query workers: %s; long merges are read by this process alone, the workers are tried "
                        "again in %.0f s", exc, RESTART_S)
            with self._lock:
                self._next_start = time.monotonic() + RESTART_S
        finally:
            self._stop_workers()
            with self._lock:
                self._thread = None

    def _start(self) -> tuple[subprocess.Popen, str]:
        args = self._args
        address = f"127.0.0.1:{_free_port()}"
        argv = [sys.executable, "-m", "flamewatch.cli", "querier", "--http-address", "127.0.0.1:0",
                "--grpc-address", address, "--cache-bytes", str(self._cache_bytes),
                "--symbolizer.address", self._symbolizer, "--query.timeout", str(args.query_timeout),
                "--log.level", args.log_level, "--parent-pid", str(os.getpid()),
                *(["--web.config.file", args.web_config_file] if args.web_config_file else [])]
        env = flags.storage_environment(args, self._dsn, os.environ)
        # its own session: a Ctrl-C in the terminal reaches `all` alone, which then stops the workers
        return subprocess.Popen(argv, env=env, start_new_session=True), address

    def _wait_ready(self, process: subprocess.Popen, address: str) -> None:
        import grpc  # not at import: the command line alone loads no service stack

        from flamewatch.rpc.channels import grpc_blocking_channel

        until = time.monotonic() + START_TIMEOUT_S
        with grpc_blocking_channel(address) as channel:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the worker on {address} exited with {process.returncode} while starting")
                try:
                    grpc.channel_ready_future(channel).result(timeout=1.0)
                    return
                except grpc.FutureTimeoutError:
                    if time.monotonic() > until or self._stopping.is_set():
                        raise RuntimeError(f"the worker on {address} did not answer within "
                                           f"{START_TIMEOUT_S:.0f} s") from None

    def _stop_workers(self) -> None:
        with self._lock:
            workers, self._workers, self._ready = self._workers, [], []
        for process, _ in workers:
            if process.poll() is None:
                process.terminate()
        for process, _ in workers:
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _free_port() -> int:
    """A loopback port free now (the worker binds it a moment later; a clash fails its start, retried)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
