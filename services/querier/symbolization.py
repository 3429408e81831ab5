"""The querier's symbolization step: names for frames that were stored as bare addresses.

At merge time, every frame without a function whose mapping has a build ID or a file name is keyed by
(object, file offset), the file offset being the address minus the mapping's start plus its offset.
Offsets not known yet are looked up in Postgres (`symbolized_frames`), then asked of the symbolizer in
one call holding every object of the query (one batch per build ID), and the answers kept in both.
Debug information uploaded after a profile was stored therefore names it at the next query.

Debug information belongs to tenants, so every answer is the query's tenant's: the symbolizer is asked
with the tenant named, and each object key, in memory and in Postgres, starts with the tenant
(`<tenant>/<build ID>`, `<tenant>/name:<file>`), so one tenant's upload never names another's frames.
A read of several tenants (X-Scope-OrgID a|b) names each block's frames by its own tenant's debug
information, as that tenant's read would; only pprof, which merges equal frames of all the blocks into one,
names such a frame by the first of the tenants (sorted) whose debug information knows it.
Only objects the symbolizer accepts are asked about (`flamewatch.buildid`): a mapping whose build ID is
not hex of a sane length, or whose file name is no file's, keeps its addresses.

Each block keeps, per answer generation, the function chain of each of its frames (inlined functions
become frames of their own), so a warm query does no per-address work. Frames that stay addresses (the
symbolizer cannot be reached, or no debug information names them yet) keep their `[file] 0x…` names,
and an answer showing any of them is marked partial with a warning naming their object.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from flamewatch.buildid import is_build_id, is_file_name
from flamewatch.pprof.wire import expand_ranges
from flamewatch.rpc.tenant import Tenants, tenant_ids
from flamewatch.storage.blockread import BlockReader
from flamewatch.storage.postgres import Database
from flamewatch.storage.symbols import Symbols

log = logging.getLogger(__name__)

Chain = tuple[tuple[str, str, int], ...]  # (function, file, line) per frame, innermost first


@dataclass(frozen=True, eq=False)
class ObjectAddresses:
    build_id: str
    file_name: str
    file_offsets: np.ndarray  # uint64, sorted and distinct


@dataclass(frozen=True, eq=False)
class ObjectAnswer:
    found: bool  # False: no debug information for the object (yet)
    chains: list[Chain]  # per file offset when found; () where no symbol covers it
    error: str = ""


class SymbolizerUnavailable(Exception):
    """The symbolizer could not be reached or failed; the answer is partial."""


class Symbolizer(Protocol):
    """All the querier needs from a symbolizer."""

    def symbolize(self, tenant: str, objects: list[ObjectAddresses]) -> list[ObjectAnswer]: ...


@dataclass(frozen=True, eq=False)
class BlockChains:
    """Per frame of a block: its names outermost first, as runs (offsets [frames + 1], names)."""

    offsets: np.ndarray
    names: np.ndarray  # object
    line_names: np.ndarray  # object: `function file:line`


@dataclass
class QueryState:
    """What one query learnt: whether some frames stayed unsymbolized because of an outage."""

    warnings: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.warnings)


@dataclass(frozen=True, eq=False)
class _Unresolved:
    """A block's frames that need a symbolizer: frame index, object key, build ID, file and offset."""

    frame: np.ndarray
    key: np.ndarray  # object
    build_id: np.ndarray  # object
    file_name: np.ndarray  # object
    offset: np.ndarray  # uint64


@dataclass(frozen=True, eq=False)
class QuerySymbols:
    """The symbolization step as one query uses it: the shared answers, the query's tenants (whose debug
    information names its frames: one, or the several a read names, sorted) and this query's state.

    A block's frames are named by its own tenant's debug information (`owner`), given as `tenant` where
    a block is named; a block of a tenant the query does not read (keys outside the usual layout, in tests
    and tools) and a read of one tenant use the query's first."""

    symbolization: Symbolization
    tenants: tuple[str, ...]
    state: QueryState

    @property
    def generation(self) -> int:
        return self.symbolization.generation

    def owner(self, tenant: str) -> str:
        """The tenant whose debug information names a block of `tenant`."""
        return tenant if tenant in self.tenants else self.tenants[0]

    def prepare(self, readers: list[BlockReader], tenants: Sequence[str] = ()) -> None:
        """`tenants`: the tenant of each reader's block (none: the query's first)."""
        owners = [self.owner(t) for t in tenants] if tenants else [self.tenants[0]] * len(readers)
        for tenant in dict.fromkeys(owners):
            self.symbolization.prepare([r for r, o in zip(readers, owners) if o == tenant], self.state, tenant)

    def has_addresses(self, reader: BlockReader, tenant: str = "") -> bool:
        return len(_unresolved(reader, self.owner(tenant)).frame) > 0

    def chains(self, reader: BlockReader, tenant: str = "") -> BlockChains:
        return self.symbolization.chains(reader, self.owner(tenant))

    def unnamed(self, reader: BlockReader, tenant: str = "") -> dict[str, str]:
        """The names shown for the block's frames that stay addresses, each with its object."""
        return self.symbolization.unnamed(reader, self.owner(tenant))

    def note_unnamed(self, unnamed: Mapping[str, str], shown: np.ndarray) -> None:
        """Warn, once per object, about frames still shown as addresses (`unnamed`: name -> object, of
        the merged blocks) among the `shown` names (those of the answer): the answer is then partial."""
        shown_names = set(np.asarray(shown, object).tolist())
        objects = sorted({obj for name, obj in unnamed.items() if name in shown_names})
        self.state.warnings.extend(f"frames of {obj} are shown as addresses: no debug information names them "
                                   "(upload it with `flamewatch debuginfo upload`, or serve it over debuginfod)"
                                   for obj in objects)


class Symbolization:
    def __init__(self, symbolizer: Symbolizer, db: Database | None, retry_missing_s: float = 5.0,
                 max_known: int = 2_000_000):
        self._symbolizer, self._db, self._retry_s, self._max_known = symbolizer, db, retry_missing_s, max_known
        self._epoch = 0  # grows when the answers in memory are dropped
        self._lock = threading.Lock()
        self._known: dict[tuple[str, int], int] = {}  # (object key, offset) -> chain id
        self._chains: list[Chain] = []
        self._chain_ids: dict[Chain, int] = {}
        self._missing_until: dict[str, float] = {}  # object key -> when to ask again
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="symbolized-frames")
        self.generation = 0  # grows whenever an answer is learnt
        self.calls = 0  # symbolizer calls made, for tests and benchmarks

    # --------------------------------------------------------------------------------- per query

    def for_query(self, tenant: Tenants) -> QuerySymbols:
        return QuerySymbols(self, tenant_ids(tenant), QueryState())

    def prepare(self, readers: list[BlockReader], state: QueryState, tenant: str) -> None:
        """Learn the chains of every unsymbolized frame of these blocks (all the tenant's): memory,
        Postgres, then one symbolizer call. A block all of whose frames are answered is not looked at again."""
        epoch = self._epoch  # answers dropped meanwhile leave these blocks unsettled
        pending = [r for r in {id(r): r for r in readers}.values() if not self._block_settled(r, tenant)]
        wanted = _wanted([_unresolved(r, tenant) for r in pending])
        wanted = {k: v for k, v in wanted.items() if not self._settled(k, v[2])}
        if wanted and self._db is not None:
            self._learn(self._from_postgres(wanted), persist=False)
            wanted = {k: v for k, v in wanted.items() if not self._settled(k, v[2])}
        if wanted and not self._ask(wanted, state, tenant):
            return
        with self._lock:
            for r in pending:
                keys = set(_unresolved(r, tenant).key.tolist())
                missing = [self._missing_until[k] for k in keys if k in self._missing_until]
                r.__dict__["_symbolization_settled"] = (tenant, epoch, min(missing, default=float("inf")))

    def _block_settled(self, reader: BlockReader, tenant: str) -> bool:
        of, epoch, until = reader.__dict__.get("_symbolization_settled", ("", -1, 0.0))
        return of == tenant and epoch == self._epoch and until > time.monotonic()

    def chains(self, reader: BlockReader, tenant: str) -> BlockChains:
        """The block's frames with what is known of them."""
        un = _unresolved(reader, tenant)
        with self._lock:
            ids = np.array([self._known.get((k, o), -1) for k, o in zip(un.key.tolist(), un.offset.tolist())],
                           np.int64)
            chains = list(self._chains)
        return _block_chains(reader, un.frame[ids >= 0], ids[ids >= 0], chains)

    def named(self, keyed: list[_Unresolved]) -> tuple[np.ndarray, list[Chain]]:
        """Of these address frames, keyed for each of the query's tenants in turn, those with an answer
        that names them (the first tenant's that knows one), and their chains."""
        with self._lock:
            ids = np.full(len(keyed[0].frame), -1, np.int64)
            for un in keyed:
                known = [self._known.get((k, o), -1) for k, o in zip(un.key.tolist(), un.offset.tolist())]
                ids = np.where(ids >= 0, ids, np.array(known, np.int64))
            chains = [self._chains[i] if i >= 0 else () for i in ids.tolist()]
        named = np.array([bool(c) for c in chains], bool)
        frame = keyed[0].frame
        return frame[named] if len(frame) else frame, [c for c in chains if c]

    def unnamed(self, reader: BlockReader, tenant: str) -> dict[str, str]:
        """The names shown for the block's frames that stay addresses (no answer yet, or an answer with no
        function), by function and by line, each with its object (file name and build ID). Kept per
        answer generation, as paths are, so a warm query does no per-address work."""
        stamp = (tenant, self._epoch, self.generation)
        cached = reader.__dict__.get("_symbolization_unnamed")
        if cached is not None and cached[0] == stamp:
            return cached[1]
        un = _unresolved(reader, tenant)
        with self._lock:
            ids = [self._known.get((k, o), -1) for k, o in zip(un.key.tolist(), un.offset.tolist())]
            unnamed = np.array([i < 0 or not self._chains[i] for i in ids], bool)
        frames = un.frame[unnamed]
        objects = [f"{f} (build ID {b})" if b and f else b or f
                   for b, f in zip(un.build_id[unnamed].tolist(), un.file_name[unnamed].tolist())]
        found: dict[str, str] = {}
        # a block whose frames all have names (most: Go's) builds no name of each of its locations here
        for names in (reader.location_names, reader.location_line_names) if len(frames) else ():
            found.update(zip(names[frames].tolist(), objects))
        reader.__dict__["_symbolization_unnamed"] = (stamp, found)
        return found

    # --------------------------------------------------------------------------------- sources

    def _settled(self, key: str, offsets: np.ndarray) -> bool:
        with self._lock:
            if self._missing_until.get(key, 0) > time.monotonic():
                return True
            return all((key, o) in self._known for o in offsets.tolist())

    def _from_postgres(self, wanted: dict) -> dict[str, tuple[np.ndarray, list[Chain]]]:
        found = {}
        with self._db.connection() as conn:
            for key, (_, _, offsets) in wanted.items():
                # typed: an untyped list of Python ints is sent as numeric[], which compares row by row
                rows = conn.execute("SELECT file_offset, frames FROM symbolized_frames WHERE object_key = %s "
                                    "AND file_offset = ANY(%s::int8[])",
                                    (key, offsets.view(np.int64).tolist())).fetchall()
                if rows:
                    found[key] = (np.array([r[0] for r in rows], np.int64).view(np.uint64),
                                  [tuple(tuple(f) for f in r[1]) for r in rows])
        return found

    def _ask(self, wanted: dict, state: QueryState, tenant: str) -> bool:
        """Ask the symbolizer about the tenant's objects; False when it could not answer (the query is then
        partial)."""
        keys = list(wanted)
        objects = [ObjectAddresses(wanted[k][0], wanted[k][1], self._not_known(k, wanted[k][2])) for k in keys]
        try:
            self.calls += 1
            answers = self._symbolizer.symbolize(tenant, objects)
        except SymbolizerUnavailable as exc:
            log.warning("symbolizer unavailable, answering with addresses: %s", exc)
            state.warnings.append(f"some frames are shown as addresses: the symbolizer is unavailable ({exc})")
            return False
        learnt = {}
        for key, obj, answer in zip(keys, objects, answers):
            if answer.found:
                learnt[key] = (obj.file_offsets, answer.chains)
            else:
                if answer.error:
                    state.warnings.append(f"frames of {obj.build_id or obj.file_name} are shown as addresses: "
                                          f"{answer.error}")
                with self._lock:
                    self._missing_until[key] = time.monotonic() + self._retry_s
        self._learn(learnt, persist=self._db is not None)
        return True

    def close(self) -> None:
        """Wait for the answers still being written to Postgres."""
        self._writer.shutdown(wait=True)

    def _not_known(self, key: str, offsets: np.ndarray) -> np.ndarray:
        with self._lock:
            return np.array([o for o in offsets.tolist() if (key, o) not in self._known], np.uint64)

    def _learn(self, found: dict[str, tuple[np.ndarray, list[Chain]]], persist: bool) -> None:
        if not found:
            return
        with self._lock:
            if len(self._known) > self._max_known:  # memory is bounded; Postgres still holds every answer
                self._known.clear()
                self._chains.clear()
                self._chain_ids.clear()
                self._epoch += 1  # blocks settled before must be looked at again
            for key, (offsets, chains) in found.items():
                for offset, chain in zip(offsets.tolist(), chains):
                    self._known[(key, offset)] = self._chain_id(chain)
            self.generation += 1
        if persist:  # a cache: written behind the answer, in order, by one thread
            self._writer.submit(self._persist, found)

    def _chain_id(self, chain: Chain) -> int:
        found = self._chain_ids.get(chain)
        if found is None:
            found = self._chain_ids[chain] = len(self._chains)
            self._chains.append(chain)
        return found

    def _persist(self, found: dict[str, tuple[np.ndarray, list[Chain]]]) -> None:
        rows = [(key, offset, json.dumps([list(f) for f in chain]))
                for key, (offsets, chains) in found.items()
                for offset, chain in zip(offsets.view(np.int64).tolist(), chains)]
        try:
            with self._db.connection() as conn, conn.cursor() as cur:
                cur.executemany("INSERT INTO symbolized_frames (object_key, file_offset, frames) VALUES (%s, %s, %s)"
                                " ON CONFLICT DO NOTHING", rows)
        except Exception as exc:  # noqa: BLE001 - a cache write failing (an outage) costs only a re-ask later
            log.info("symbolized frames not cached in Postgres: %s", exc)


# ------------------------------------------------------------------------------------------ per block


def _unresolved(reader: BlockReader, tenant: str) -> _Unresolved:
    """Frames with no function inside a mapping with a build ID or a file name, with their file offsets
    and the tenant's object keys (a block is one tenant's, so the cached one is the one asked for)."""
    cached = reader.__dict__.get("_symbolization_unresolved")
    if cached is not None and cached[0] == tenant:
        return cached[1]
    mp, strings = reader.mappings, reader.strings
    un = _address_frames(reader.frames, _Mappings(mp["memory_start"], mp["memory_limit"], mp["file_offset"],
                                                  _texts(strings, mp["build_id"]), _texts(strings, mp["filename"])),
                         tenant)
    reader.__dict__["_symbolization_unresolved"] = (tenant, un)
    return un


@dataclass(frozen=True, eq=False)
class _Mappings:
    start: np.ndarray  # uint64
    limit: np.ndarray  # uint64
    offset: np.ndarray  # uint64
    build_id: np.ndarray  # str
    file_name: np.ndarray  # str


def _texts(strings: np.ndarray, index: np.ndarray) -> np.ndarray:
    return strings[index].astype(str) if len(index) else np.zeros(0, str)


def _address_frames(fr: dict[str, np.ndarray], mp: _Mappings, tenant: str) -> _Unresolved:
    """The frames (rows of a frames table) that hold only an address in an object the symbolizer can be
    asked about, with that object's key for the tenant and the address's offset in its file."""
    frame = np.flatnonzero((fr["function"] < 0) & (fr["mapping"] >= 0))
    m = fr["mapping"][frame]
    address = fr["address"][frame].astype(np.uint64)
    inside = (mp.start[m] <= address) & (address < mp.limit[m]) if len(m) else np.zeros(0, bool)
    frame, m, address = frame[inside], m[inside], address[inside]
    keys = np.array([_object_key(tenant, b, f) for b, f in zip(mp.build_id.tolist(), mp.file_name.tolist())],
                    object)  # one step per mapping, not per frame
    usable = keys[m] != "" if len(m) else np.zeros(0, bool)
    frame, m, address = frame[usable], m[usable], address[usable]
    offset = address - mp.start[m] + mp.offset[m]
    return _Unresolved(frame, keys[m], mp.build_id[m].astype(object), mp.file_name[m].astype(object),
                       offset.astype(np.uint64))


def _object_key(tenant: str, build_id: str, file_name: str) -> str:
    """The tenant's key of a mapping's object: by build ID, else by file base name; "" when the symbolizer
    is not to be asked ([vdso], [vsyscall], or a name or build ID it would refuse)."""
    if build_id:
        return f"{tenant}/{build_id.lower()}" if is_build_id(build_id) else ""
    if file_name.startswith("[") or not is_file_name(file_name):
        return ""
    return f"{tenant}/name:{file_name.rsplit('/', 1)[-1]}"


def gathered_chains(symbols: QuerySymbols, gathered: Symbols) -> tuple[np.ndarray, list[Chain]]:
    """The frames of gathered symbols (see `flamewatch.storage.gather`) that are bare addresses named by
    what the symbolizer answered for the query's tenants, and their chains (innermost first); `prepare` the
    blocks first. Equal frames of several tenants' blocks are one frame here: the first tenant whose debug
    information knows it names it."""
    mp, strings = gathered.mappings, gathered.strings
    mappings = _Mappings(mp[:, 2].view(np.uint64), mp[:, 3].view(np.uint64), mp[:, 4].view(np.uint64),
                         _texts(strings, mp[:, 1]), _texts(strings, mp[:, 0]))
    return symbols.symbolization.named([_address_frames(gathered.frames, mappings, t) for t in symbols.tenants])


def _wanted(parts: list[_Unresolved]) -> dict[str, tuple[str, str, np.ndarray]]:
    """Per object key: (build ID, file name, distinct sorted offsets) over all blocks."""
    out: dict[str, tuple[str, str, list[np.ndarray]]] = {}
    for un in parts:
        if not len(un.key):
            continue
        keys, inverse = np.unique(un.key.astype(str), return_inverse=True)
        for i, key in enumerate(keys.tolist()):  # one step per object file, not per frame
            pick = np.flatnonzero(inverse.reshape(-1) == i)
            entry = out.setdefault(key, (str(un.build_id[pick[0]]), str(un.file_name[pick[0]]), []))
            entry[2].append(un.offset[pick])
    return {k: (b, f, np.unique(np.concatenate(o))) for k, (b, f, o) in out.items()}


def _block_chains(reader: BlockReader, frames: np.ndarray, ids: np.ndarray, chains: list[Chain]) -> BlockChains:
    """Each frame's names, outermost first: a symbolized frame's chain, any other frame its stored name."""
    used, inverse = np.unique(ids, return_inverse=True)
    inverse = inverse.reshape(-1)
    flat_names, flat_lines, run = _flattened([chains[i] for i in used.tolist()])
    lengths = np.ones(len(reader.frames["function"]), np.int64)
    lengths[frames] = np.maximum(run[inverse], 1)  # a chain with no frame keeps the frame's stored name
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    names = np.repeat(reader.location_names, lengths).astype(object)
    line_names = np.repeat(reader.location_line_names, lengths).astype(object)
    chain_start = np.cumsum(run) - run
    target = expand_ranges(offsets[frames], run[inverse])
    source = expand_ranges(chain_start[inverse], run[inverse])
    names[target] = flat_names[source]
    line_names[target] = flat_lines[source]
    return BlockChains(offsets, names, line_names)


def _flattened(chains: list[Chain]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Names and line names of the chains, each outermost first, end to end; and each chain's length."""
    frames = [frame for chain in chains for frame in reversed(chain)]  # one step per distinct frame
    names = np.array([f[0] for f in frames], object)
    lines = np.array([f"{f[0]} {f[1].rsplit('/', 1)[-1]}:{f[2]}" if f[1] else f[0] for f in frames], object)
    return names, lines, np.array([len(c) for c in chains], np.int64)
