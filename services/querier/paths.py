"""Every function path the querier has seen, numbered once.

When a block is loaded, each node of its stack tree is mapped to the id of its function path (the
names from the root down to it); blocks sharing stacks share ids. A merge is then one scatter-add of the
selected profiles' values into an array indexed by path id — no tree merging per query — and the
merged call tree is read off the paths with a value.

Paths are kept as a trie in sorted numpy arrays: key = parent path id << 32 | name id. Mapping a block
walks its tree level by level (searchsorted for known paths, one insert per level for new ones).
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa

from flamewatch.querier.calltree import ROOT_NAME, CallTree


def with_ancestors(parent: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """`paths` and every ancestor of them, ascending: ids grow from parent to child, so a parent comes first."""
    keep = np.zeros(len(parent), bool)
    frontier = paths
    while len(frontier):  # one step up for all paths at once: as many steps as the deepest path
        keep[frontier] = True
        up = parent[frontier]
        frontier = np.unique(up[(up >= 0) & ~keep[np.maximum(up, 0)]])
    return np.flatnonzero(keep)


class PathIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names = pa.array([ROOT_NAME], pa.string())
        self._keys = np.zeros(0, np.int64)  # sorted trie keys
        self._ids = np.zeros(0, np.int64)  # path id of each key
        self._parent = np.full(1, -1, np.int64)  # per path; path 0 is the root
        self._name = np.zeros(1, np.int64)  # per path, index into _names
        self._binary = np.array([""], object)  # per name: the file of the mapping it was first seen in

    def __len__(self) -> int:
        return len(self._parent)

    def map_tree(self, parent: np.ndarray, depth: np.ndarray, node_names: np.ndarray, names: np.ndarray,
                 binaries: np.ndarray | None = None) -> np.ndarray:
        """Path id of every node of a stack tree; `node_names[i]` indexes `names` (the root's is ignored).
        `binaries`, aligned with `names`, is where each was executed from ("" unknown; see `binaries`)."""
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 2))
        with self._lock:
            name_ids = self._intern(names, binaries)
            path = np.zeros(len(parent), np.int64)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                level = order[lo:hi]
                keys = path[parent[level]] << 32 | name_ids[node_names[level]]
                path[level] = self._lookup_or_add(keys)
            return path

    def map_tree_runs(self, parent: np.ndarray, depth: np.ndarray, node_frames: np.ndarray, offsets: np.ndarray,
                      names: np.ndarray, binaries: np.ndarray | None = None) -> np.ndarray:
        """Like `map_tree`, but frame f stands for the run of names `names[offsets[f]:offsets[f + 1]]`
        (outermost first): a symbolized address with inlined functions is several levels of the path."""
        order = np.argsort(depth, kind="stable")
        bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 2))
        lengths = np.diff(offsets)
        with self._lock:
            name_ids = self._intern(names, binaries)
            path = np.zeros(len(parent), np.int64)
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                level = order[lo:hi]
                frames = node_frames[level]
                at, runs = path[parent[level]], lengths[frames]
                for j in range(int(runs.max(initial=0))):  # once per inlined depth, vectorised over the level
                    live = runs > j
                    at[live] = self._lookup_or_add(at[live] << 32 | name_ids[offsets[frames[live]] + j])
                path[level] = at
            return path

    def _intern(self, names: np.ndarray, binaries: np.ndarray | None) -> np.ndarray:
        import pyarrow.compute as pc  # at the first query, not at start: see calltree.intern

        wanted = pa.array(names, pa.string())
        found = pc.index_in(wanted, value_set=self._names).to_numpy(zero_copy_only=False)
        missing = np.isnan(found) if found.dtype.kind == "f" else np.zeros(len(found), bool)
        if missing.any():
            new = pc.unique(wanted.filter(pa.array(missing)))
            self._names = pa.concat_arrays([self._names, new])
            self._binary = np.concatenate([self._binary, np.full(len(new), "", object)])
            found = pc.index_in(wanted, value_set=self._names).to_numpy(zero_copy_only=False)
        ids = np.asarray(found, np.int64) if len(found) else np.zeros(0, np.int64)
        if binaries is not None and len(ids):
            known = np.asarray(binaries, object) != ""
            unset = known & (self._binary[ids] == "")
            self._binary[ids[unset]] = np.asarray(binaries, object)[unset]
        return ids

    def binaries(self, names: list[str]) -> list[str]:
        """Where each of `names` was executed from: the file of the mapping its frames carried when first
        seen with one (a function in two binaries shows the first), "" when none did or it is not known."""
        import pyarrow.compute as pc

        with self._lock:
            table, binary = self._names, self._binary
        found = pc.index_in(pa.array(names, pa.string()), value_set=table).to_numpy(zero_copy_only=False)
        at = np.nan_to_num(np.asarray(found, np.float64), nan=-1).astype(np.int64)
        return np.where(at >= 0, binary[np.maximum(at, 0)], "").tolist()

    def _lookup_or_add(self, keys: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self._keys, keys)
        hit = pos < len(self._keys)
        hit[hit] = self._keys[pos[hit]] == keys[hit]
        out = np.empty(len(keys), np.int64)
        out[hit] = self._ids[pos[hit]]
        if not hit.all():
            new_keys, inverse = np.unique(keys[~hit], return_inverse=True)
            new_ids = np.arange(len(self._parent), len(self._parent) + len(new_keys))
            at = np.searchsorted(self._keys, new_keys)
            self._keys, self._ids = np.insert(self._keys, at, new_keys), np.insert(self._ids, at, new_ids)
            self._parent = np.concatenate([self._parent, new_keys >> 32])
            self._name = np.concatenate([self._name, new_keys & 0xFFFFFFFF])
            out[~hit] = new_ids[inverse.reshape(-1)]
        return out

    def arrays(self) -> tuple[np.ndarray, np.ndarray, pa.Array]:
        """Per path its parent and name id, and the name table: a consistent view of what is known now."""
        with self._lock:
            return self._parent, self._name, self._names

    def binary_table(self) -> np.ndarray:
        """Per name id, where it was executed from (see `binaries`); names learnt later are not in it."""
        with self._lock:
            return self._binary

    def tree(self, values: np.ndarray) -> CallTree:
        """The call tree of the paths with a value and their ancestors; `values` is indexed by path id."""
        with self._lock:
            parent, name, names = self._parent[: len(values)], self._name[: len(values)], self._names
        kept = with_ancestors(parent, np.union1d([0], np.flatnonzero(values)))
        renumber = np.full(len(values), -1, np.int64)
        renumber[kept] = np.arange(len(kept))
        kept_parent = np.where(parent[kept] >= 0, renumber[np.maximum(parent[kept], 0)], -1)
        used, name_index = np.unique(name[kept], return_inverse=True)
        table = names.take(pa.array(used)).to_numpy(zero_copy_only=False)
        return CallTree(table, kept_parent, name_index.reshape(-1), values[kept])
