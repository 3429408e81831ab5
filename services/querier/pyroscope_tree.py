"""Pyroscope's tree serialization (`SelectMergeStacktracesResponse.tree`) of a merged call tree.

Nodes are written depth first, parents before children; per node: the name's length as a varint, the
name's UTF-8 bytes, the self value as a varint and the number of children as a varint. The first node is
a nameless root whose children are the outermost frames. Values are unsigned on the wire: a negative
self value (a pushed comparison) is written in two's complement, as Go's uint64 conversion would.
"""

from __future__ import annotations

import numpy as np

from flamewatch.querier.calltree import CallTree, as_int, compact_names, truncate


def encode_tree(tree: CallTree, max_nodes: int) -> bytes:
    """The tree truncated to `max_nodes` nodes (the rest folded into `other`) in Pyroscope's encoding."""
    small = truncate(tree, max_nodes)
    names, name_index = compact_names(small)
    labels = [n.encode() for n in names[name_index].tolist()]
    labels[0] = b""  # the root is the nameless virtual root
    self_value = as_int(small.self_value).astype(np.int64).tolist()
    children = _children(small.parent)
    out = bytearray()
    # One step per output node, bounded by max_nodes; the stack holds nodes still to write.
    stack = [0]
    while stack:
        node = stack.pop()
        kids = children[node]
        out += _varint(len(labels[node])) + labels[node] + _varint(self_value[node]) + _varint(len(kids))
        stack.extend(reversed(kids))
    return bytes(out)


def _children(parent: np.ndarray) -> list[list[int]]:
    """Children of each node, in node order."""
    out: list[list[int]] = [[] for _ in range(len(parent))]
    for child, p in enumerate(parent.tolist()):
        if p >= 0:
            out[p].append(child)
    return out


def _varint(value: int) -> bytes:
    value &= 2**64 - 1
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
