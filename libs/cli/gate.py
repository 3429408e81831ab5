"""`flamewatch gate`: fail a CI job when a change made something significantly slower.

    flamewatch gate --baseline old/*.pb.gz --candidate new/*.pb.gz --threshold 1%
    flamewatch gate --url http://flamewatch:8080 --baseline-query 'process_cpu:...{version="1.4"}' \\
        --candidate-query 'process_cpu:...{version="1.5"}' --from now-1h

Exit codes: 0 when no function's share grew significantly by at least the threshold, 1 when one did
(they are listed first), 2 when the input is bad (the reason is printed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flamewatch.cli.web import client_flags, use_client_flags

OK, REGRESSED, BAD_INPUT = 0, 1, 2


def add_parsers(sub) -> None:
    p = sub.add_parser("gate", help="compare two sets of profiles and fail when something got significantly slower",
                       description="Compare a baseline with a candidate, function by function: each profile is one "
                       "observation, each function's share of the total is compared with a rank test (adjusted "
                       "for the number of functions) and an interval. Exits 0 when nothing grew significantly by "
                       "--threshold or more, 1 when something did, 2 on bad input. With files on both sides no "
                       "server is needed; with --baseline-query/--candidate-query a server compares what it "
                       "stores.")
    p.add_argument("--baseline", nargs="+", type=Path, default=[], metavar="FILE",
                   help="pprof files of the baseline, e.g. from go test -cpuprofile (several: one run each)")
    p.add_argument("--candidate", nargs="+", type=Path, default=[], metavar="FILE", help="pprof files of the candidate")
    p.add("--baseline-query", "the baseline as a query of a server (with --url)", dest="baseline_query", default=None)
    p.add("--candidate-query", "the candidate as a query of a server", dest="candidate_query", default=None)
    p.add("--url", "the server (flamewatch all, a querier or the frontend) for the queries",
          default="http://127.0.0.1:8080")
    p.add("--from", "start of both queries' range", dest="start", default="now-1h")
    p.add("--until", "end of both queries' range", default="now")
    p.add("--tenant", "tenant of the queries (X-Scope-OrgID)", default=None)
    p.add("--threshold", "the smallest growth of a function's share that fails the gate: 1%% (one percent of the "
          "total) or 0.01", default="1%", type=_share)
    p.add("--order", "rank by the change of self or of total share", choices=["self", "total"], default="self")
    p.add("--sample-type", "with files: the sample type to compare (default the last: cpu of a CPU profile, "
          "inuse_space of a heap profile)", dest="sample_type", default=None)
    p.add("--alpha", "the false discovery rate of what is called significant", type=float, default=0.01)
    p.add("--top", "rows to print", type=int, default=20)
    p.add("--timeout", "seconds to wait for the server", type=float, default=120.0)
    client_flags(p)
    p.set_defaults(run=run_gate, log_level="warning")


def _share(text: str) -> float:
    from flamewatch.changes.stats import parse_share  # imported by the flag's parse: numpy, not at --help

    try:
        return parse_share(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def run_gate(args: argparse.Namespace) -> int:
    from flamewatch.changes.stats import Changes

    try:
        changes = _from_files(args) if args.baseline or args.candidate else _from_server(args)
    except (ValueError, OSError) as exc:
        print(f"flamewatch gate: {exc}", file=sys.stderr)
        return BAD_INPUT
    assert isinstance(changes, Changes)
    regressions = changes.regressions(args.threshold, args.order)
    print(_table(changes, args))
    for note in changes.notes:
        print(f"note: {note}")
    if regressions:
        names = ", ".join(f.name for f in regressions[:5])
        print(f"FAIL: {len(regressions)} function(s) grew significantly by {args.threshold:.2%} of the total or "
              f"more: {names}")
        return REGRESSED
    print(f"OK: no function's {args.order} share grew significantly by {args.threshold:.2%} or more "
          f"({changes.profiles[0]} baseline and {changes.profiles[1]} candidate profiles)")
    return OK


def _from_files(args: argparse.Namespace):
    import numpy as np

    from flamewatch.changes.pprof_files import aligned, file_shares
    from flamewatch.changes.stats import Settings, compare

    if not (args.baseline and args.candidate):
        raise ValueError("give files on both sides: --baseline FILE... and --candidate FILE...")
    if args.baseline_query or args.candidate_query:
        raise ValueError("compare files or queries, not both")
    sides = [file_shares(files, args.sample_type) for files in (args.baseline, args.candidate)]
    columns = np.unique(np.concatenate([n for names, *_ in sides for n in names]))
    matrices = [(aligned(names, self_shares, columns), aligned(names, total_shares, columns))
                for names, self_shares, total_shares, _ in sides]
    return compare(columns, *matrices[0], *matrices[1], Settings(alpha=args.alpha), args.order)


def _from_server(args: argparse.Namespace):
    import httpx

    from flamewatch.changes.stats import Changes, FunctionChange, Measure
    from flamewatch.clientconfig import server_name_extensions, ssl_context
    from flamewatch.rpc.channels import http_headers, identity
    from flamewatch.upload import base_url, error_message

    if not (args.baseline_query and args.candidate_query):
        raise ValueError("give both sides: --baseline FILE... and --candidate FILE..., or --baseline-query and "
                         "--candidate-query with --url")
    use_client_flags(args)
    me = identity()
    params = {"a_query": args.baseline_query, "b_query": args.candidate_query, "from": args.start,
              "until": args.until, "order": args.order, "alpha": args.alpha, "limit": 10_000}
    headers = {**http_headers(), **({"X-Scope-OrgID": args.tenant} if args.tenant else {})}
    try:
        with httpx.Client(base_url=base_url(args.url), timeout=args.timeout, verify=ssl_context(me.tls)) as client:
            answer = client.get("/api/v1/changes", params=params, headers=headers,
                                extensions=server_name_extensions(me.tls))
    except httpx.HTTPError as exc:
        raise ValueError(f"cannot reach {args.url}: {exc}") from exc
    if answer.status_code != 200:
        raise ValueError(f"{args.url} refused the comparison ({answer.status_code}): {error_message(answer)}")
    body = answer.json()

    def measure(m: dict) -> Measure:
        return Measure(m["a"], m["b"], m["change"], _bound(m["low"], -1), _bound(m["high"], 1), m["p"],
                       m["significant"])

    functions = [FunctionChange(f["name"], measure(f["self"]), measure(f["total"])) for f in body["functions"]]
    return Changes(functions, (body["profiles"]["a"], body["profiles"]["b"]), tuple(body["notes"]))


def _bound(value: float | None, infinite: int) -> float:
    return float("inf") * infinite if value is None else value


def _table(changes, args: argparse.Namespace) -> str:
    rows = [f"{'function':<48} {args.order + ' a':>9} {args.order + ' b':>9} {'change':>9} {'95% interval':>21} "
            f"{'p (adj.)':>9}  verdict"]
    for f in changes.functions[: args.top]:
        m = getattr(f, args.order)
        verdict = ("REGRESSION" if m.change >= args.threshold else "grew") if m.significant and m.change > 0 else \
            "improved" if m.significant else "not significant"
        interval = f"[{m.low:+.2%}, {m.high:+.2%}]"
        rows.append(f"{f.name[:48]:<48} {m.a:>9.2%} {m.b:>9.2%} {m.change:>+9.2%} {interval:>21} {m.p:>9.3g}  "
                    f"{verdict}")
    return "\n".join(rows)
