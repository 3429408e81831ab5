"""Long merges split between querier replicas: more processes, more cores, more cache.

The asking querier finds the query's series and plans the merge (`mergeplan.merge_plan`: the index rows it
takes whole from pre-merged trees, the profiles of the others), whose counts per row (a series in a
block, `MergePlan.counts`) are enough to hold the query to the tenant's cost limit and to weigh it; a
merge not split is read from that same plan. A merge that
would read at least `--query.split-min-profiles` (a pre-merged tree counting as `TREE_COST` profiles) is
cut in time (`cut_times`) into one piece per live peer and one for itself, of about equal work, at
whole hours so no series' hour is read by two. Each piece is merged where it is sent, from the index to
the blocks, exactly as that querier merges a query of its own (`PartialService`,
`proto/flamewatch/v1/partial.proto`), and answered as a compact call tree, which the asker maps into its
own `PathIndex` and adds to its own piece's with `sources.combine`. Sums add up the same however the
range is cut; a gauge's values are divided by its series' profiles over the whole range, which the
asker sends along, and add up as exact `Shares`: the answer does not depend on how many peers there
were. A repeated query cuts the same way, so each replica keeps its own part of a range in its cache.

Peers are `--query.peers`: `HOST:PORT,...`, or `dns:///NAME:PORT` for every address a headless Service
resolves to (re-resolved every `RESOLVE_EVERY_S`; this host's own addresses left out). A peer that fails
(down, refusing the querier's client identity, of another version) has its piece read here instead, and
is left out for `REST_S`; running out of the query's time raises the query's timeout, and a query that
fails or is cancelled cancels the calls it made.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

import grpc
import numpy as np
from prometheus_client import Counter

from flamewatch.api.flamewatch.v1 import partial_pb2, partial_pb2_grpc
from flamewatch.querier import deadline
from flamewatch.querier.merging import GRANULARITIES
from flamewatch.querier.paths import PathIndex, with_ancestors
from flamewatch.querier.shares import Shares
from flamewatch.querier.sources import PartialTree
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.channels import grpc_blocking_channel
from flamewatch.rpc.tenant import HEADER, Tenants, joined
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.frames import forest_depths

log = logging.getLogger(__name__)

# What reading one pre-merged tree costs, in profiles: about 3 us (a fleet's week of 16,800 trees in 50-60 ms
# of one querier's CPU beyond its fixed part) against 0.25-1.5 us per profile read raw
TREE_COST = 4
RESOLVE_EVERY_S = 30.0
REST_S = 30.0
# a tree of a million nodes by lines is ~25 MB
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 256 << 20)]

SPLIT_PIECES = Counter("flamewatch_querier_split_pieces", "Pieces of split merges, by where they were merged",
                       ["where"])
PARTIAL_PROFILES = Counter("flamewatch_querier_partial_profiles",
                           "Profiles this querier merged for another one's split merge")


class Piece(NamedTuple):
    """A piece of a merge, merged: its partial tree, the profiles it holds, and what symbolizing it
    warned of when a peer merged it (a piece merged here warns through the query's own symbols)."""

    tree: PartialTree
    profiles: int
    warnings: tuple[str, ...] = ()


Range = tuple[int, int]  # ns, both ends included
ReadPiece = Callable[[int, int], Piece]


# ------------------------------------------------------------------------------------ cutting


def entry_work(first: np.ndarray, last: np.ndarray, count: np.ndarray, with_trees: np.ndarray) -> np.ndarray:
    """What merging each index row (a series in a block) costs, in profiles: its profiles, or in a block
    with pre-merged trees `TREE_COST` per hour it spans (at most its profiles)."""
    hours = last // TREE_SPAN_NS - first // TREE_SPAN_NS + 1
    return np.where(with_trees, np.minimum(hours * TREE_COST, count), count)


def cut_times(first: np.ndarray, work: np.ndarray, start: int, end: int, parts: int) -> list[Range]:
    """[start, end] in up to `parts` pieces of about equal work, cut at whole hours: each index row's
    work counted at the hour of its first profile (`first`), a cut at the start of the hour where the
    work done so far reaches the next share. Fewer pieces when the work sits in fewer hours."""
    if parts <= 1 or not len(first) or start >= end:
        return [(start, end)]
    hour = first - first % TREE_SPAN_NS
    hours, at = np.unique(hour, return_inverse=True)
    per_hour = np.bincount(at.reshape(-1), weights=work.astype(np.float64))
    before = np.cumsum(per_hour) - per_hour  # the work in earlier hours
    targets = per_hour.sum() * np.arange(1, parts) / parts
    cuts = np.unique(hours[np.minimum(np.searchsorted(before, targets), len(hours) - 1)])
    cuts = cuts[(cuts > start) & (cuts <= end)].tolist()
    bounds = [start, *cuts]
    return [(lo, hi - 1) for lo, hi in zip(bounds, bounds[1:])] + [(bounds[-1], end)]


# ------------------------------------------------------------------------------------ the wire


def _array(data: bytes, dtype) -> np.ndarray:
    return np.frombuffer(data, np.dtype(dtype).newbyteorder("<"))


def _bytes(values: np.ndarray, dtype) -> bytes:
    return np.ascontiguousarray(values, np.dtype(dtype).newbyteorder("<")).tobytes()


def range_request(query: str, piece: Range, granularity: str, symbolize: bool,
                  divisors: tuple[np.ndarray, np.ndarray] | None) -> partial_pb2.MergePartialRequest:
    """The request for a piece of a query's range; `divisors` (series ids, their profiles over the whole
    range) for a gauge."""
    request = partial_pb2.MergePartialRequest(query=query, start=piece[0], end=piece[1], granularity=granularity,
                                              symbolize=symbolize)
    if divisors is not None:
        request.divisor_series, request.divisor_profiles = (_bytes(a, np.int64) for a in divisors)
    return request


def request_range(request: partial_pb2.MergePartialRequest
                  ) -> tuple[str, Range, tuple[np.ndarray, np.ndarray] | None]:
    """The query, piece and gauge divisors a request hands over; ValueError when they do not make one
    (a peer of another version, or a broken request)."""
    if not request.query:
        raise ValueError("a partial merge names no query: the asking querier is of another version, which "
                         "cuts merges by row; run one version of the querier")
    if request.start > request.end:
        raise ValueError(f"a partial merge's range ends ({request.end}) before it starts ({request.start})")
    if request.granularity not in GRANULARITIES:
        raise ValueError(f'unknown granularity "{request.granularity}": expected one of {", ".join(GRANULARITIES)}')
    series, profiles = _array(request.divisor_series, np.int64), _array(request.divisor_profiles, np.int64)
    if len(series) != len(profiles):
        raise ValueError("a partial merge's divisors differ in length from their series")
    if len(profiles) and profiles.min() < 1:
        raise ValueError("a partial merge's divisors must be at least 1")
    return request.query, (request.start, request.end), (series, profiles) if len(series) else None


def tree_response(piece: Piece, warnings: list[str]) -> partial_pb2.MergePartialResponse:
    """A merged piece as the paths with a value and their ancestors, numbered from 0 (the root)."""
    p = piece.tree
    all_parent, all_name, names = p.paths.arrays()
    shares = isinstance(p.sums, Shares)
    used = np.unique(p.sums.path) if shares else np.flatnonzero(p.sums)
    kept = with_ancestors(all_parent, np.union1d([0], used))
    renumber = np.full(int(kept[-1]) + 1, -1, np.int64)
    renumber[kept] = np.arange(len(kept))
    parent = np.where(all_parent[kept] >= 0, renumber[np.maximum(all_parent[kept], 0)], -1)
    table, name = np.unique(all_name[kept], return_inverse=True)
    out = partial_pb2.MergePartialResponse(
        parent=_bytes(parent, np.int64), name=_bytes(name.reshape(-1), np.int32),
        names=names.take(table).to_pylist(), binaries=p.paths.binary_table()[table].tolist(), unnamed=dict(p.unnamed),
        warnings=list(warnings), shares=shares, profiles=piece.profiles, by_range=True)
    if shares:
        out.share_node, out.share_divisor, out.share_total = (
            _bytes(renumber[p.sums.path], np.int64), _bytes(p.sums.divisor, np.int64), _bytes(p.sums.total, np.int64))
    elif p.sums.dtype.kind == "f":
        out.float_values = _bytes(p.sums[kept], np.float64)
    else:
        out.int_values = _bytes(p.sums[kept], np.int64)
    return out


def response_tree(response: partial_pb2.MergePartialResponse, paths: PathIndex) -> Piece:
    """A peer's merged piece keyed by this querier's path ids."""
    if not response.by_range:
        raise ValueError("the peer answered a share by row: it is of another version")
    parent = _array(response.parent, np.int64)
    ids = paths.map_tree(parent, forest_depths(parent), _array(response.name, np.int32),
                         np.array(list(response.names), object), np.array(list(response.binaries), object)
                         if len(response.binaries) == len(response.names) else None)
    size = int(ids.max(initial=0)) + 1
    if response.shares:
        sums = Shares(ids[_array(response.share_node, np.int64)], _array(response.share_divisor, np.int64).copy(),
                      _array(response.share_total, np.int64).copy())
    else:
        values = _array(response.float_values, np.float64) if response.float_values else \
            _array(response.int_values, np.int64)
        sums = np.zeros(size, values.dtype)
        sums[ids] = values
    return Piece(PartialTree(paths, sums, dict(response.unnamed)), response.profiles, tuple(response.warnings))


# ------------------------------------------------------------------------------------ the peers


class PeerAddresses:
    """The peers `--query.peers` names: a fixed list, or what a DNS name resolves to now."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._dns = spec.removeprefix("dns:///") if spec.startswith("dns:///") else None
        self._fixed = [] if self._dns else [a.strip() for a in spec.split(",") if a.strip()]
        if self._dns is not None:
            host, sep, port = self._dns.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f'--query.peers "{spec}": expected dns:///NAME:PORT, e.g. '
                                 "dns:///flamewatch-querier-headless:4201")
            self._host, self._port = host, int(port)
        for address in self._fixed:
            if address.rpartition(":")[2].isdigit() is False:
                raise ValueError(f'--query.peers "{spec}": "{address}" is not HOST:PORT')
        self._resolved: list[str] = []
        self._at = float("-inf")
        self._lock = threading.Lock()

    def __call__(self) -> list[str]:
        if self._dns is None:
            return self._fixed
        with self._lock:
            if time.monotonic() - self._at >= RESOLVE_EVERY_S:
                self._at = time.monotonic()
                self._resolved = self._resolve()
            return self._resolved

    def _resolve(self) -> list[str]:
        try:
            found = {info[4][0] for info in socket.getaddrinfo(self._host, self._port, type=socket.SOCK_STREAM)}
        except OSError as exc:
            log.warning("querier peers: resolving %s failed (%s); merges are read here alone until it resolves",
                        self._host, exc)
            return []
        own = _own_addresses()
        return [f"[{a}]:{self._port}" if ":" in a else f"{a}:{self._port}" for a in sorted(found - own)]


def _own_addresses() -> set[str]:
    try:
        return {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)} | {"127.0.0.1", "::1"}
    except OSError:
        return {"127.0.0.1", "::1"}


class Peers:
    """Other queriers that take pieces of long merges."""

    def __init__(self, addresses: Callable[[], list[str]], min_profiles: int) -> None:
        self._addresses, self.min_profiles = addresses, min_profiles
        self._stubs: dict[str, tuple[grpc.Channel, partial_pb2_grpc.PartialServiceStub]] = {}
        self._resting: dict[str, float] = {}
        self._lock = threading.Lock()
        self._failures = RateLimitedLog(log)

    def close(self) -> None:
        with self._lock:
            for channel, _ in self._stubs.values():
                channel.close()
            self._stubs.clear()

    def live(self) -> list[str]:
        now = time.monotonic()
        return [a for a in self._addresses() if self._resting.get(a, 0.0) <= now]

    def pieces(self, tenant: Tenants, pieces: list[Range], peers: list[str],
               request: Callable[[Range], partial_pb2.MergePartialRequest], read: ReadPiece,
               paths: PathIndex) -> list[Piece]:
        """The merged pieces: the first read here, the others by the peers, round robin (`read` here
        for a peer that fails)."""
        calls = []
        try:
            for i, piece in enumerate(pieces[1:]):
                address = peers[i % len(peers)]
                calls.append((address, piece, self._call(address, tenant, request(piece))))
            results = [read(*pieces[0])]
            SPLIT_PIECES.labels("here").inc()
            for address, piece, future in calls:
                results.append(self._answer(address, piece, future, read, paths))
            return results
        finally:
            for _, _, future in calls:
                future.cancel()  # a no-op for answered calls; stops the rest when this merge failed

    def _call(self, address: str, tenant: Tenants, request: partial_pb2.MergePartialRequest) -> grpc.Future:
        with self._lock:
            if address not in self._stubs:
                channel = grpc_blocking_channel(address, _CHANNEL_OPTIONS)
                self._stubs[address] = (channel, partial_pb2_grpc.PartialServiceStub(channel))
            stub = self._stubs[address][1]
        return stub.MergePartial.future(request, timeout=deadline.remaining(), metadata=((HEADER, joined(tenant)),))

    def _answer(self, address: str, piece: Range, future: grpc.Future, read: ReadPiece, paths: PathIndex) -> Piece:
        try:
            answer = response_tree(future.result(), paths)
        except (grpc.RpcError, ValueError) as exc:
            if isinstance(exc, grpc.RpcError) and exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                deadline.check()  # ours ran out: the query's own timeout error
            why = f"{exc.code().name}: {exc.details()}" if isinstance(exc, grpc.RpcError) else str(exc)
            self._resting[address] = time.monotonic() + REST_S
            self._failures.log(logging.WARNING, address, "querier peer %s failed a partial merge (%s); its piece "
                               "is merged here, and it is left out for %.0f s", address, why, REST_S)
            SPLIT_PIECES.labels("here").inc()
            return read(*piece)
        SPLIT_PIECES.labels("peers").inc()
        return answer
