"""Long merges split between querier replicas: more processes, more cores, more cache.

The asking querier does what only it can do once: the index lookup, each row's weight, the tenant's
cost limit and the choice of rows pre-merged trees answer. Then `Peers.partials` cuts the rows into one
share per live peer and one for itself, and each share is read where it is sent (`PartialService`,
`proto/flamewatch/v1/partial.proto`): the peer folds its rows through its own block cache exactly as
the asker would (`Querier.read_partials`) and answers a compact call tree, which the asker maps into its
own `PathIndex` and adds to the rest with `sources.combine`. Sums (and gauges' exact `Shares`) add up the
same however the rows are cut, so the answer does not depend on how many peers there were.

How rows are cut (`split`): in the order of their blocks, then series, hour and row, into contiguous
runs of equal cost (a row read from its profile costs 1, a pre-merged tree `TREE_COST`), cut only
between two (block, series, hour) groups so a tree stays with all of its rows. Each share then reads a
contiguous run of blocks, at most one block is read by two shares, and a repeated query cuts the same
way, so each replica keeps its own part of a range in its cache.

Peers are `--query.peers`: `HOST:PORT,...`, or `dns:///NAME:PORT` for every address a headless Service
resolves to (re-resolved every `RESOLVE_EVERY_S`; this host's own addresses left out). A peer that fails
(down, refusing the querier's client identity) has its share read here instead, and is left out for
`REST_S`; running out of the query's time raises the query's timeout, and a query that fails or is
cancelled cancels the calls it made.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Sequence

import grpc
import numpy as np
from prometheus_client import Counter

from flamewatch.api.flamewatch.v1 import partial_pb2, partial_pb2_grpc
from flamewatch.labels.selector import format_matchers, parse_selector
from flamewatch.querier import deadline
from flamewatch.querier.merging import GRANULARITIES, Rows
from flamewatch.querier.paths import PathIndex, with_ancestors
from flamewatch.querier.selection import Filter
from flamewatch.querier.shares import Shares
from flamewatch.querier.sources import PartialTree
from flamewatch.querier.symbolization import QuerySymbols
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.channels import grpc_blocking_channel
from flamewatch.storage.blockformat import TREE_SPAN_NS
from flamewatch.storage.frames import forest_depths, run_codes

log = logging.getLogger(__name__)

TREE_COST = 8  # what reading one pre-merged tree costs, in profile rows (a tree holds more nodes than one profile)
RESOLVE_EVERY_S = 30.0
REST_S = 30.0
# a tree of a million nodes by lines is ~25 MB; a peer's server takes requests up to 64 MiB
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 256 << 20), ("grpc.max_send_message_length", 64 << 20)]
_MAX_SHARE_ROWS = 4_000_000  # ~40 MB of request; a larger merge is cut into more shares than there are peers

SPLIT_ROWS = Counter("flamewatch_querier_split_rows", "Profile rows of split merges, by where they were read",
                     ["where"])
PARTIAL_ROWS = Counter("flamewatch_querier_partial_rows", "Profile rows this querier read for another one's merge")

ReadShare = Callable[[Rows, np.ndarray | None], list[PartialTree]]


# ------------------------------------------------------------------------------------ cutting


def split(block: np.ndarray, by_tree: np.ndarray | None, series: np.ndarray, hour: np.ndarray,
          parts: int) -> list[np.ndarray]:
    """Indices of the rows (ascending) in up to `parts` shares of about equal cost (see the module
    docstring): groups of one block (`block`: a code per row, in the order of the blocks), series and
    hour, in that order, each wholly in one share."""
    if parts <= 1 or not len(block):
        return [np.arange(len(block))]
    group = _groups(block, series, hour)
    n_groups = int(group.max()) + 1
    rows = np.bincount(group, minlength=n_groups)
    trees = np.zeros(n_groups, np.int64) if by_tree is None else np.bincount(group[by_tree], minlength=n_groups)
    cost = (trees > 0) * TREE_COST + rows - trees  # a tree's rows cost TREE_COST together
    end = np.cumsum(cost)
    share = np.minimum((end - cost) * parts // max(int(end[-1]), 1), parts - 1)[group]  # by where its group starts
    out = [np.flatnonzero(share == i) for i in range(parts)]
    return [s for s in out if len(s)]


def _groups(block: np.ndarray, series: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """Per row, its (block, series, hour) group's number, numbered in that order: the key itself while the
    keys are dense (a few per row), else its rank among the distinct keys."""
    hour_code = (hour - hour.min()) // TREE_SPAN_NS
    series_code = series - series.min()
    key = (block * (int(series_code.max()) + 1) + series_code) * (int(hour_code.max()) + 1) + hour_code
    if int(key.max()) < 8 * len(key):
        return key
    return np.unique(key, return_inverse=True)[1].reshape(-1)


# ------------------------------------------------------------------------------------ the wire


def _array(data: bytes, dtype) -> np.ndarray:
    return np.frombuffer(data, np.dtype(dtype).newbyteorder("<"))


def _bytes(values: np.ndarray, dtype) -> bytes:
    return np.ascontiguousarray(values, np.dtype(dtype).newbyteorder("<")).tobytes()


def share_request(r: Rows, by_tree: np.ndarray | None, granularity: str, symbolize: bool,
                  index: np.ndarray | None = None, codes: tuple[np.ndarray, np.ndarray] | None = None
                  ) -> partial_pb2.MergePartialRequest:
    """The request for the rows at `index` (None: all), their blocks named by `codes` (`run_codes` of
    `r.block_id`, made once for every share of a merge: a million block ids are not copied per share)."""
    ids, code = codes if codes is not None else run_codes(r.block_id)
    pick = slice(None) if index is None else index

    def column(values: np.ndarray | None, dtype) -> bytes:
        return b"" if values is None else _bytes(values[pick], dtype)

    code = code[pick]
    used = np.flatnonzero(np.bincount(code, minlength=len(ids)))
    renumber = np.zeros(len(ids), np.int64)
    renumber[used] = np.arange(len(used))
    names = ids[used].tolist()
    return partial_pb2.MergePartialRequest(
        block_ids=names, block_keys=[r.keys[b] for b in names], block=_bytes(renumber[code], np.int32),
        row=column(r.row, np.int64), weights=column(r.weights, np.float64), divisors=column(r.divisors, np.int64),
        filters=[format_matchers(f) for f in r.filters], row_filter=column(r.row_filter, np.int32),
        by_tree=column(by_tree, np.uint8), granularity=granularity, symbolize=symbolize)


def share_rows(request: partial_pb2.MergePartialRequest, tenant: str) -> tuple[Rows, np.ndarray | None]:
    """The rows a request hands over, and which of them pre-merged trees may answer; ValueError when the
    arrays do not agree (a peer of another version, or a broken request) or a block is not the tenant's."""
    ids = np.array(list(request.block_ids), object)
    if len(request.block_keys) != len(ids):
        raise ValueError("a partial merge needs one key per block")
    own = f"{tenant}/blocks/"
    if any(not key.startswith(own) or ".." in key for key in request.block_keys):
        raise ValueError(f'a partial merge may read only the blocks of its tenant "{tenant}"')
    if request.granularity not in GRANULARITIES:
        raise ValueError(f'unknown granularity "{request.granularity}": expected one of {", ".join(GRANULARITIES)}')
    block = _array(request.block, np.int32)
    row = _array(request.row, np.int64)
    n = len(row)
    optional = {name: _array(getattr(request, name), dtype) if getattr(request, name) else None
                for name, dtype in (("weights", np.float64), ("divisors", np.int64), ("row_filter", np.int32),
                                    ("by_tree", np.uint8))}
    if len(block) != n or any(a is not None and len(a) != n for a in optional.values()):
        raise ValueError("a partial merge's row arrays differ in length")
    if n and (block.min() < 0 or block.max() >= len(ids)):
        raise ValueError("a partial merge names a block it does not list")
    filters: list[Filter] = [parse_selector(f) for f in request.filters] or [()]
    row_filter = optional["row_filter"]
    if row_filter is not None and n and (row_filter.min() < 0 or row_filter.max() >= len(filters)):
        raise ValueError("a partial merge names a sample filter it does not list")
    keys = dict(zip(ids.tolist(), request.block_keys))
    by_tree = optional["by_tree"]
    return (Rows(keys, ids[block], row, optional["weights"], tuple(filters), row_filter, optional["divisors"]),
            None if by_tree is None else by_tree.astype(bool))


def tree_response(p: PartialTree, warnings: Sequence[str]) -> partial_pb2.MergePartialResponse:
    """A partial tree as the paths with a value and their ancestors, numbered from 0 (the root)."""
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
        names=names.take(table).to_pylist(), unnamed=dict(p.unnamed), warnings=list(warnings), shares=shares)
    if shares:
        out.share_node, out.share_divisor, out.share_total = (
            _bytes(renumber[p.sums.path], np.int64), _bytes(p.sums.divisor, np.int64), _bytes(p.sums.total, np.int64))
    elif p.sums.dtype.kind == "f":
        out.float_values = _bytes(p.sums[kept], np.float64)
    else:
        out.int_values = _bytes(p.sums[kept], np.int64)
    return out


def response_tree(response: partial_pb2.MergePartialResponse, paths: PathIndex) -> PartialTree:
    """A peer's tree keyed by this querier's path ids."""
    parent = _array(response.parent, np.int64)
    ids = paths.map_tree(parent, forest_depths(parent), _array(response.name, np.int32),
                         np.array(list(response.names), object))
    size = int(ids.max(initial=0)) + 1
    if response.shares:
        sums = Shares(ids[_array(response.share_node, np.int64)], _array(response.share_divisor, np.int64).copy(),
                      _array(response.share_total, np.int64).copy())
    else:
        values = _array(response.float_values, np.float64) if response.float_values else \
            _array(response.int_values, np.int64)
        sums = np.zeros(size, values.dtype)
        sums[ids] = values
    return PartialTree(paths, sums, dict(response.unnamed))


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
    """Other queriers that take shares of long merges."""

    def __init__(self, addresses: Callable[[], list[str]], min_rows: int) -> None:
        self._addresses, self.min_rows = addresses, min_rows
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

    def partials(self, tenant: str, r: Rows, by_tree: np.ndarray | None, series: np.ndarray, hour: np.ndarray,
                 granularity: str, symbols: QuerySymbols | None, read: ReadShare, paths: PathIndex
                 ) -> list[PartialTree] | None:
        """The partial trees of the rows, read here and by the peers; None when the merge is too small to
        split or no peer is live (the caller reads it alone)."""
        if len(r.row) < self.min_rows:
            return None
        peers = self.live()
        if not peers:
            return None
        parts = max(len(peers) + 1, -(-len(r.row) // _MAX_SHARE_ROWS))
        codes = run_codes(r.block_id)
        shares = split(codes[1], by_tree, series, hour, parts)
        if len(shares) < 2:
            return None
        # share 0 here, the rest round robin over the peers (shares beyond the peers only for huge merges)
        calls = []
        try:
            for i, share in enumerate(shares[1:]):
                address = peers[i % len(peers)]
                request = share_request(r, by_tree, granularity, symbols is not None, share, codes)
                calls.append((address, share, self._call(address, tenant, request)))
            mine = shares[0]
            results = read(r.take(mine), None if by_tree is None else by_tree[mine])
            SPLIT_ROWS.labels("here").inc(len(mine))
            for address, share, future in calls:
                results.extend(self._answer(address, share, future, r, by_tree, symbols, read, paths))
            return results
        finally:
            for _, _, future in calls:
                future.cancel()  # a no-op for answered calls; stops the rest when this merge failed

    def _call(self, address: str, tenant: str, request: partial_pb2.MergePartialRequest) -> grpc.Future:
        with self._lock:
            if address not in self._stubs:
                channel = grpc_blocking_channel(address, _CHANNEL_OPTIONS)
                self._stubs[address] = (channel, partial_pb2_grpc.PartialServiceStub(channel))
            stub = self._stubs[address][1]
        return stub.MergePartial.future(request, timeout=deadline.remaining(), metadata=(("x-scope-orgid", tenant),))

    def _answer(self, address: str, share: np.ndarray, future: grpc.Future, r: Rows, by_tree: np.ndarray | None,
                symbols: QuerySymbols | None, read: ReadShare, paths: PathIndex) -> list[PartialTree]:
        try:
            response = future.result()
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                deadline.check()  # ours ran out: the query's own timeout error
            self._resting[address] = time.monotonic() + REST_S
            self._failures.log(logging.WARNING, address, "querier peer %s failed a partial merge (%s: %s); its share "
                               "is read here, and it is left out for %.0f s", address, exc.code().name,
                               exc.details(), REST_S)
            SPLIT_ROWS.labels("here").inc(len(share))
            return read(r.take(share), None if by_tree is None else by_tree[share])
        SPLIT_ROWS.labels("peers").inc(len(share))
        if symbols is not None:
            symbols.state.warnings.extend(w for w in response.warnings if w not in symbols.state.warnings)
        return [response_tree(response, paths)]
