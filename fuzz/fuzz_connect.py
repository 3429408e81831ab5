"""Fuzz target: Pyroscope's push over Connect, from the request body to the ingester's input.

An input is one byte that picks the codec (even: `application/proto`, odd: `application/json`) and
whether the body is gzipped (bit 1), then the body. It goes through what `rpc.connect.serve` does with a
`push.v1.PusherService/Push` body (bounded gunzip, decode into a `PushRequest`) and `pyroscope.series_of`.
Expected: `LimitExceeded` (over the body or profile-count limit) and the `ValueError`s these functions
raise themselves for a malformed body or push; a ValueError from elsewhere (numpy, protobuf internals)
is a finding.

Checks on a push that is accepted:
- one entry per series, with that series' samples (IDs and raw bytes) in order; at least one profile;
  no more than the profile-count limit;
- no label is Pyroscope's internal `__delta__` or `__session_id__`; every label name is made of
  `[A-Za-z0-9_]` and does not start with a digit; each value is the value sent under a name that
  becomes that label.
"""

from __future__ import annotations

import re
import sys

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.api.push.v1 import push_pb2
    from flamewatch.ingester.pyroscope import DROPPED_LABELS, label_name, series_of
    from flamewatch.pprof import LimitExceeded
    from flamewatch.rpc import connect

MAX_BODY = 1 << 20
MAX_PROFILES = 64
PROCEDURE = "push.v1.PusherService/Push"
# Empty is let through here: label validation, the next step of every push, refuses it with its own message.
LABEL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?")
# The ValueErrors the code under test raises itself, by the start of their message.
OWN_MESSAGES = ("request body is not valid gzip", f"malformed {connect.PROTO} body", f"malformed {connect.JSON} body",
                "push has no profiles", "labels ")


class ExpectedValueError(Exception):
    """A ValueError that the code under test raised on purpose."""


def target(data: bytes) -> None:
    if not data:
        return
    codec = connect.JSON if data[0] & 1 else connect.PROTO
    body = data[1:]
    try:
        if data[0] & 2:
            body = connect.gunzip(body, MAX_BODY)
        request = connect.decode(codec, body, push_pb2.PushRequest, PROCEDURE)
        series = series_of(request, MAX_PROFILES)
    except LimitExceeded:
        raise
    except ValueError as exc:
        if type(exc) is ValueError and str(exc).startswith(OWN_MESSAGES):
            raise ExpectedValueError(str(exc)) from exc
        raise
    _check(request, series)


def _check(request, series) -> None:
    check(len(series) == len(request.series), "series lost or added")
    count = sum(len(samples) for _, samples in series)
    check(0 < count <= MAX_PROFILES, f"{count} profiles accepted")
    for (labels, samples), sent in zip(series, request.series, strict=True):
        check(samples == [(s.ID, s.raw_profile) for s in sent.samples], "samples differ from the request's")
        check(not DROPPED_LABELS & set(labels), "an internal label was kept")
        for name, value in labels.items():
            check(bool(LABEL_NAME.fullmatch(name)), f"label name {name!r} is not a label name")
            check(any(label_name(p.name) == name and p.value == value for p in sent.labels),
                  f"label {name}={value!r} was not sent")


if __name__ == "__main__":
    main("connect", target, (LimitExceeded, ExpectedValueError))
    sys.exit(0)
