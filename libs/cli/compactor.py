"""`flamewatch compactor`: compaction and retention rounds alone, and the process `flamewatch all` runs it in.

`flamewatch all` answers queries in the process that would otherwise compact: a round reads and writes
whole hours of blocks, so its CPU and memory peaks came on top of the queries' (a cold query took 4 s
instead of 0.15 s while a round ran; issue 21). So `all` runs the ingester without its maintenance loop
and starts `flamewatch compactor` beside it (`start_beside`): at a lower CPU priority, on the same
storage, its log lines in the same stream; stopped with `all`, and stopping by itself when `all` is gone,
also after a SIGKILL. The process lives only while there is something to compact: once an interval `all`
asks Postgres whether a round would run a job (a tenant's hour has ended, or its day), starts the
compactor when one would, and the compactor exits once its round leaves nothing to compact. Between
times `all` applies retention itself (queries and deletes, no block read), and the ~120 MB a Python
process with Arrow and Postgres's client takes is not held for the hour in between. Split deployments
run `flamewatch ingester --compaction.interval` as before, or a compactor of their own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

from flamewatch.cli import flags
from flamewatch.cli.process import listen, open_storage, run, serve, watch_parent
from flamewatch.ratelimitedlog import RateLimitedLog

if TYPE_CHECKING:
    from flamewatch.ingester.compactor import Maintenance
    from flamewatch.storage.objstore import ObjectStore
    from flamewatch.storage.postgres import Database

log = logging.getLogger("flamewatch")

NICE_BESIDE_ALL = 10  # below the queries and pushes of `flamewatch all`, above nothing else's work
STOP_TIMEOUT_S = 5.0  # a round stops only between jobs; past this the job is killed (the store stays consistent)
RESTART_S = 10.0
# `all` is started first: the compactor's own start (its imports take about a second of CPU) waits this
# long, or one interval if shorter, so it does not slow the start of the process users wait for
START_DELAY_S = 5.0


def add_parser(sub) -> None:
    p = sub.add_parser("compactor", help="compact and expire stored blocks, with no ingest (`flamewatch all` "
                       "runs one beside itself)",
                       description="Every --compaction.interval seconds, merge small flushed blocks into hour "
                       "and day blocks and apply retention, as `flamewatch ingester --compaction.interval` does, "
                       "in a process of its own; one compactor per tenant works at a time (a Postgres lock).")
    p.address("--http-address", "HTTP listen address (/metrics, /healthz, /readyz, /debug/pprof)", ":4102")
    flags.storage_flags(p)
    flags.maintenance_flags(p)
    p.add("--nice", "lower this process's CPU priority by this much (as nice(1) does), so that compaction "
          "takes what the machine's other work leaves", type=int, default=0)
    # `flamewatch all`'s own: stop once that process is gone (no SIGTERM comes when it is killed), and stop
    # once a round leaves nothing to compact (`all` starts it again when there is)
    p.add_argument("--parent-pid", dest="parent_pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--exit-when-done", dest="exit_when_done", action="store_true", help=argparse.SUPPRESS)
    flags.common_flags(p)
    p.set_defaults(run=run_compactor)


def run_compactor(args: argparse.Namespace) -> int:
    from flamewatch.ingester.assemble import assemble_compactor
    from flamewatch.rpc.readiness import storage_readiness

    config = flags.maintenance_config(args)
    if config.interval_s <= 0:
        raise ValueError("--compaction.interval must be greater than 0 for a compactor")
    storage = flags.storage_config(args)
    if args.nice:
        os.nice(args.nice)
    _one_decoding_thread()

    async def main(stack: contextlib.AsyncExitStack) -> None:
        listeners = listen(args, stack, args.http_address, None)
        watch_parent(stack, args.parent_pid, "compactor")
        store, db = open_storage(stack, storage)
        done = _stop_this_process if args.exit_when_done else None
        await serve(args, listeners, assemble_compactor(stack, config, store, db, done),
                    ready=storage_readiness(store, db))

    return run(main)


def _one_decoding_thread() -> None:
    """Arrow decodes a block's columns on one thread here: a flush block's row groups are small, so its
    thread pool cost more than it saved (an hour of 540 flush blocks: 4.8 s of CPU with it, 4.4 s
    without), and a process working in the background should not take every core from the queries."""
    import pyarrow

    pyarrow.set_cpu_count(1)


def _stop_this_process() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def start_beside(stack: contextlib.AsyncExitStack, args: argparse.Namespace, store: ObjectStore, db: Database) -> None:
    """Run `flamewatch compactor` as a child of this process on the same storage (`db`: the database this
    process opened) whenever a round has something to compact, unless compaction is off; between times,
    apply retention here. The stack stops it."""
    if args.compaction_interval <= 0:
        return
    from flamewatch.ingester.compactor import Maintenance

    argv = [sys.executable, "-m", "flamewatch.cli", "compactor", "--http-address", "127.0.0.1:0",
            "--nice", str(NICE_BESIDE_ALL), "--parent-pid", str(os.getpid()), "--exit-when-done",
            "--compaction.interval", str(args.compaction_interval), "--log.level", args.log_level,
            *(["--storage.retention", _duration(args.retention)] if args.retention else []),
            *[w for tenant, keep in args.tenant_retention
              for w in ("--storage.retention-tenant", f"{tenant}={_duration(keep) if keep else 'forever'}")],
            *(["--web.config.file", args.web_config_file] if args.web_config_file else [])]
    child = Child(argv, flags.storage_environment(args, db.dsn, os.environ))
    maintenance = Maintenance(flags.maintenance_config(args), store, db)
    supervising = asyncio.create_task(child.supervise(maintenance, min(START_DELAY_S, args.compaction_interval),
                                                      args.compaction_interval), name="compactor-process")
    stack.push_async_callback(child.stop, supervising)


class Child:
    """The compactor process: started when a round has something to compact, waited for (it exits once
    nothing is left), started again after `RESTART_S` if it fails (a crash must not end compaction for the
    life of `flamewatch all`), and stopped."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._argv, self._env = argv, env
        self._process: subprocess.Popen | None = None
        self._failures = RateLimitedLog(log)

    async def supervise(self, maintenance: Maintenance, delay_s: float, interval_s: float) -> None:
        await asyncio.sleep(delay_s)
        while True:
            try:
                due = await asyncio.to_thread(maintenance.compaction_due)
                if not due:
                    await asyncio.to_thread(maintenance.retention_now)
            except Exception as exc:  # noqa: BLE001 - Postgres away: asked again next interval
                self._failures.log(logging.WARNING, type(exc).__name__, "compaction: asking what is due failed: %s",
                                   exc)
                due = []
            if due:
                # its own session: a Ctrl-C in the terminal reaches `all` alone, which then stops the compactor
                self._process = subprocess.Popen(self._argv, env=self._env, start_new_session=True)
                log.info("compaction due for %d tenant(s) (%s): it runs in its own process (pid %d, nice %d) until "
                         "done", len(due), ", ".join(due[:3]) + (", ..." if len(due) > 3 else ""),
                         self._process.pid, NICE_BESIDE_ALL)
                code = await asyncio.to_thread(self._process.wait)
                if code != 0:
                    log.warning("the compactor process exited with %s; starting it again in %.0f s", code, RESTART_S)
                    await asyncio.sleep(RESTART_S)
                    continue
            await asyncio.sleep(interval_s)

    async def stop(self, supervising: asyncio.Task) -> None:
        """SIGTERM, then SIGKILL after `STOP_TIMEOUT_S`: a job cut short leaves objects the sweeper removes."""
        supervising.cancel()
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            await asyncio.to_thread(process.wait)


def _duration(ns: int) -> str:
    """A duration flag's text for `ns` (the flags read ms at the finest)."""
    whole, rest = divmod(ns, 10**6)
    return f"{whole}ms" if not rest else f"{whole}.{rest:06d}ms"
