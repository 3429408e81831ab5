"""Label sets as `LabelPair` messages and back: the one conversion for every contract that carries them.

Our own API (`flamewatch.v1.LabelPair`) and Pyroscope's (`types.v1.LabelPair`) declare the same two
fields, `name` and `value`, so one function serves both: the caller names the message type it speaks.
Pairs are written sorted by name, so equal label sets make equal messages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar


class LabelPairMessage(Protocol):
    name: str
    value: str


Pair = TypeVar("Pair", bound=LabelPairMessage)


def label_pairs(labels: Mapping[str, str], pair_type: type[Pair]) -> list[Pair]:
    """`{"service_name": "a"}` → `[LabelPair(name="service_name", value="a")]`, sorted by name."""
    return [pair_type(name=name, value=value) for name, value in sorted(labels.items())]


def labels_of_pairs(pairs: Iterable[LabelPairMessage]) -> dict[str, str]:
    """The label set of a list of pairs; a name given twice keeps its last value, as protobuf maps do."""
    return {pair.name: pair.value for pair in pairs}
