"""Fuzz target: the Pyroscope SDKs' `/ingest` request, multipart form and `name=` (`ingester.pyroscope_ingest`).

An input is the `name=` parameter, a line break, then a multipart/form-data body whose boundary is
`b0undary` (as the seeds write it). It is converted as `/ingest` converts a request with
`format=pprof&spyName=pyspy&from=..&until=..`: the application name and its tags, the form's fields
(`profile`, `sample_type_config`, `prev_profile`) and the name hint. Expected: `ValueError` (bad
metadata, 400), `UnprocessableError` (a body that is not a form with a profile, 422) and
`UnsupportedFormatError` (415), all raised by the converter itself; a ValueError raised elsewhere
(json, re, a bytes decode) is a finding.

Checks on a request that converts:
- the profile is a non-empty part of the body;
- the labels have `service_name` (or `app_name`) = the application, `pyroscope_spy` = pyspy, and every
  label name is made of `[A-Za-z0-9_]`;
- the name hint is one of the profile names Pyroscope's suffixes and sample types stand for.
"""

from __future__ import annotations

import re
import sys

import atheris
from harness import check, main

with atheris.instrument_imports(include=["flamewatch"]):
    from flamewatch.ingester.pyroscope_ingest import SUFFIX_NAMES, convert, parse_app_name
    from flamewatch.rpc.errors import UnprocessableError, UnsupportedFormatError

CONTENT_TYPE = 'multipart/form-data; boundary="b0undary"'
QUERY = {"format": "pprof", "spyName": "pyspy", "from": "1700000000", "until": "1700000010"}
# Empty is let through here: label validation, the next step of every push, refuses it with its own message.
LABEL_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)?")
HINTS = {None, *SUFFIX_NAMES.values(), "goroutine", "mutex", "block"}


class ExpectedValueError(Exception):
    """A ValueError raised by the converter on purpose (bad metadata)."""


def target(data: bytes) -> None:
    name, _, body = data.partition(b"\n")
    query = {**QUERY, "name": name.decode("utf-8", "replace")}
    try:
        request = convert(query, CONTENT_TYPE, body)
    except (UnprocessableError, UnsupportedFormatError):
        raise
    except ValueError as exc:
        if type(exc) is ValueError and _raised_by_converter(exc):
            raise ExpectedValueError(str(exc)) from exc
        raise
    check(len(request.profile) > 0 and request.profile in body, "the profile is not part of the body")
    app = parse_app_name(query["name"]).app
    check(app in (request.labels.get("service_name"), request.labels.get("app_name")), "the application is lost")
    check(request.labels.get("pyroscope_spy") == "pyspy", "spyName is not the pyroscope_spy label")
    for label in request.labels:
        check(bool(LABEL_NAME.fullmatch(label)), f"label name {label!r} is not a label name")
    check(request.name_hint in HINTS, f"unknown name hint {request.name_hint!r}")
    check(request.span == (1_700_000_000 * 10**9, 1_700_000_010 * 10**9), "from/until lost")


def _raised_by_converter(exc: BaseException) -> bool:
    """Whether the innermost frame of the error is in the converter's own module."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.endswith("pyroscope_ingest.py")


if __name__ == "__main__":
    main("multipart", target, (UnprocessableError, UnsupportedFormatError, ExpectedValueError))
    sys.exit(0)
