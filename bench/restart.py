"""How long `flamewatch all` takes to be ready again after a kill -9, on a data directory that holds data.

    .venv/bin/python bench/restart.py [--runs 5] [--services 5]

Starts `flamewatch all` on a new data directory (embedded Postgres, filesystem objects), pushes real Go
profiles to it (the corpus of `corpus.py`: a fleet of `--services` x 4 instances, a CPU and an allocs
pprof per instance every minute over the hour that ended an hour ago), then, `--runs` times for each
case, kills it with SIGKILL, starts it again and times from the new process's start to its first
`/readyz` 200 (polled every 20 ms). Cases:

    flamewatch killed    kill -9 of Flamewatch only: its embedded Postgres runs on and is used again
    both killed          kill -9 of Flamewatch and of the embedded Postgres, as when a container or a
                         machine goes away: Postgres starts again and recovers from its WAL

After each restart it also times the first push (`POST /ingest` of one profile, answered once durable)
and then the first query (a flamegraph of one service over the pushed hour), so that what was made lazy
shows where it costs. Finally one more restart runs with `PYTHONPROFILEIMPORTTIME=1`, and the packages
whose imports took longest in it are listed (self time; the import timer itself slows imports down).

Prints median/min/max and writes `bench/results/<UTC time>-restart.md` and `.json` with the load average
at the start and the end (the machine is usually shared: read the figures with it in mind).
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import allinone
import httpx
from corpus import Fleet, at_time, load_or_capture
from pushing import push
from report import RESULTS_DIR, environment, stamp

CASES = ("flamewatch killed", "both killed")
QUERY = 'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="svc-0"}'


@dataclass
class Case:
    name: str
    ready_s: list[float] = field(default_factory=list)
    first_push_s: list[float] = field(default_factory=list)
    first_query_s: list[float] = field(default_factory=list)


def fill(node: allinone.AllInOne, services: int, pool) -> tuple[Fleet, int]:
    """Push the fleet's hour (the one that ended an hour ago) over gRPC; the fleet and the pprofs pushed."""
    hour = (int(time.time()) // 3600 - 2) * 3600
    fleet = Fleet(services=services, instances=4, every_s=60, start_ns=hour * 10**9, seconds=3600)
    stats = push([node.grpc], fleet.pushes(pool), concurrency=8, batch=20)
    return fleet, stats.pprofs


def first_requests(node: allinone.AllInOne, fleet: Fleet, served: bytes) -> tuple[float, float]:
    with httpx.Client(timeout=120) as client:
        started = time.monotonic()
        client.post(f"{node.url}/ingest", params={"service_name": "restart-probe"},
                    content=at_time(served, time.time_ns())).raise_for_status()
        pushed = time.monotonic()
        client.get(f"{node.url}/api/v1/query", params={"query": QUERY, "from": str(fleet.start_ns // 10**6),
                                                         "until": str(fleet.end_ns // 10**6),
                                                         "format": "flamegraph"}).raise_for_status()
        return pushed - started, time.monotonic() - pushed


def restart(node: allinone.AllInOne, case: Case, fleet: Fleet, served: bytes,
            env: dict[str, str]) -> allinone.AllInOne:
    allinone.kill(node)
    if case.name == "both killed":
        allinone.kill_postgres(node)
    node, ready = allinone.start(node.data, env=env)
    push_s, query_s = first_requests(node, fleet, served)
    case.ready_s.append(ready)
    case.first_push_s.append(push_s)
    case.first_query_s.append(query_s)
    print(f"  {case.name}: ready after {ready:.2f} s, first push {push_s:.2f} s, first query {query_s:.2f} s",
          flush=True)
    return node


def import_profile(node: allinone.AllInOne, env: dict[str, str]) -> tuple[allinone.AllInOne, list[tuple[str, float]]]:
    """One more kill -9 and restart with the import timer on; (package, self seconds), longest first."""
    allinone.kill(node)
    log = node.data.parent / "importtime.log"
    log.unlink(missing_ok=True)
    node, _ = allinone.start(node.data, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, log_name=log.name)
    time.sleep(1)  # imports made just after ready (the first scrape) are listed too
    by_package: collections.Counter[str] = collections.Counter()
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            self_us, _, name = line.removeprefix("import time:").split("|")
            parts = name.strip().split(".")
            package = ".".join(parts[:2]) if parts[0] == "flamewatch" else parts[0]
            by_package[package] += int(self_us) / 1e6
    return node, by_package.most_common()


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def table(cases: list[Case]) -> str:
    lines = ["| case | runs | ready after restart, median (min, max) | goal <= 3 s | first push | first query |",
             "|---|---|---|---|---|---|"]
    for c in cases:
        met = "yes" if statistics.median(c.ready_s) <= 3 else "NO"
        lines.append(f"| {c.name} | {len(c.ready_s)} | {summary(c.ready_s)} | {met} | "
                     f"{statistics.median(c.first_push_s):.2f} s | {statistics.median(c.first_query_s):.2f} s |")
    return "\n".join(lines)


def write(name: str, text: str, data: dict) -> Path:
    md = RESULTS_DIR / f"{name}-restart.md"
    md.write_text(text)
    md.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    return md


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="restarts per case")
    parser.add_argument("--services", type=int, default=5, help="services in the pushed fleet (x 4 instances)")
    parser.add_argument("--corpus", type=int, default=12, help="captured profiles of each kind to replay")
    parser.add_argument("--compile-each-start", action="store_true", help="keep PYTHONDONTWRITEBYTECODE if "
                        "set, so that every start compiles Flamewatch's modules again (see allinone.environment)")
    args = parser.parse_args()
    env = allinone.environment(compile_each_start=args.compile_each_start)
    name, env_start = stamp(), environment()
    allinone.become_subreaper()
    with tempfile.TemporaryDirectory(prefix="flamewatch-restart-") as tmp:
        pool = load_or_capture(args.corpus, Path(tmp))
        data = Path(tmp) / "data"
        data.mkdir()
        node, first_ready = allinone.start(data, env=env)
        cases = [Case(c) for c in CASES]
        try:
            print(f"first start on an empty data directory: ready after {first_ready:.2f} s", flush=True)
            fleet, pprofs = fill(node, args.services, pool)
            print(f"pushed {pprofs} pprofs ({args.services} services x 4 instances, an hour)", flush=True)
            for run in range(args.runs):
                for case in cases:
                    node = restart(node, case, fleet, pool.profiles["cpu"][run % len(pool.profiles["cpu"])], env)
            node, imports = import_profile(node, env)
        finally:
            allinone.stop(node)
        with (Path(tmp) / "flamewatch.log").open() as log:
            errors = [line.strip() for line in log if " ERROR " in line or "Traceback" in line][:5]
    env_end = environment()
    top = "\n".join(f"| {package} | {seconds:.3f} |" for package, seconds in imports[:15])
    text = (f"# Restart benchmark, {name}\n\nCommit {env_end['commit']}, {env_end['cores']} cores, shared with "
            f"other work: load average (1, 5, 15 min) {env_start['load_average']} at the start, "
            f"{env_end['load_average']} at the end.\n\nData: {pprofs} pprofs pushed first ({args.services} "
            f"services x 4 instances, an hour); first start on the empty directory ready after "
            f"{first_ready:.2f} s. Modules: {'compiled at each start' if args.compile_each_start else 'compiled once'}."
            f"\n\n{table(cases)}\n\n## Imports of one restart (self time under "
            f"PYTHONPROFILEIMPORTTIME, by package)\n\n| package | seconds |\n|---|---|\n{top}\n"
            + ("\n## Errors in the log\n\n" + "\n".join(f"- `{e}`" for e in errors) + "\n" if errors else ""))
    print("\n" + text)
    data_out = {"settings": vars(args), "environment": {"start": env_start, "end": env_end}, "pprofs": pprofs,
                "first_ready_s": first_ready, "cases": [vars(c) for c in cases], "imports": imports[:40]}
    print(f"written to {write(name, text, data_out)}")


if __name__ == "__main__":
    main()
