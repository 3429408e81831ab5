"""The Pyroscope SDKs' HTTP `/ingest`, converted to the input of `Ingester.push`.

The SDKs (pyroscope-go and the others built on the same upload code) send
`POST /ingest?name=app.cpu{k=v,...}&from=...&until=...&format=pprof&spyName=...&sampleRate=...`
with either the pprof as the raw body or a multipart form: `profile` (the pprof), `sample_type_config`
(JSON: sample type -> units, aggregation, display-name, sampled, cumulative) and, from old clients,
`prev_profile`. A request is in this form when it has a `name` parameter; otherwise `/ingest` is our
own form (every query parameter a label).

The conversion, following what a Pyroscope server does with the same request:
- `name=`: the application name becomes `service_name` (kept as `app_name` when the tags set
  `service_name` themselves); a known type suffix (`.cpu`, `.inuse_space`, `.mutex_count`, ...) is
  taken off it; the tags become labels, with "." in their names turned into "_" and a leading digit
  given a "_" before it (`flamewatch.labels.sanitize`, as on every push path), and tags starting with
  "__" dropped except `__session_id__`.
- the profile name (`__name__`) comes from the pprof's content as for every push; the suffix, or else
  the display names of `sample_type_config` (Go's mutex and block profiles share their sample types and
  differ only there), are the hint that chooses between the names the content allows.
- `from`/`until` give the profile's time and duration when the pprof has none (epoch s, ms, us or ns,
  told apart by size, as the SDKs send them; or RFC 3339, or `now-1h`).
- `spyName` becomes the `pyroscope_spy` label.

Failures, as the SDKs expect them: bad metadata (the query string, `sample_type_config`) is a
ValueError (400); a pprof that does not decode or breaks pprof's rules is the ingester's PprofError
(400, as in our own form of `/ingest` and on every other push path); a multipart body that cannot be
read as a form with a `profile` part is UnprocessableError (422); a format other than pprof is
UnsupportedFormatError (415); size limits stay LimitExceeded (413). Nothing of a rejected request is
written: `push` stores all of a request's profiles or none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from flamewatch.labels.names import SERVICE_LABEL
from flamewatch.labels.sanitize import label_name
from flamewatch.rpc.errors import UnprocessableError, UnsupportedFormatError
from flamewatch.timerange import parse_time

# What `Ingester.push` takes: tenant, [(labels, [(client id, raw pprof)])], name hint, (from, until).
Push = Callable[..., Awaitable[tuple[int, int]]]

APP_LABEL = "app_name"
SPY_LABEL = "pyroscope_spy"
SESSION_LABEL = "__session_id__"

# The type suffix of an application name -> the profile name it stands for (Pyroscope's mapping).
SUFFIX_NAMES = {
    "cpu": "process_cpu", "itimer": "process_cpu", "wall": "wall",
    "inuse_objects": "memory", "inuse_space": "memory", "alloc_objects": "memory", "alloc_space": "memory",
    "alloc_in_new_tlab_objects": "memory", "alloc_in_new_tlab_bytes": "memory",
    "alloc_outside_tlab_objects": "memory", "alloc_outside_tlab_bytes": "memory", "live": "memory",
    "bytes": "memory", "goroutines": "goroutine", "mutex_count": "mutex", "mutex_duration": "mutex",
    "block_count": "block", "block_duration": "block", "lock_count": "block", "lock_duration": "block",
    "exceptions": "exceptions",
}
# Formats the SDKs may send that Flamewatch does not read: refused with 415 and this reason.
UNSUPPORTED_FORMATS = {
    "jfr": "Java Flight Recorder (format=jfr) profiles are not supported yet; push pprof instead "
           "(async-profiler can write pprof with `-o pprof`)",
    "speedscope": "speedscope profiles (format=speedscope) are not supported; push pprof instead",
    "trie": "Pyroscope's trie format (format=trie) is not supported; push pprof instead",
    "tree": "Pyroscope's tree format (format=tree) is not supported; push pprof instead",
    "lines": "Pyroscope's lines format (format=lines) is not supported; push pprof instead",
    "groups": "collapsed stacks (format=groups, also the default without format=) are not supported; "
              "push pprof with format=pprof",
    "folded": "collapsed stacks (format=folded) are not supported; push pprof with format=pprof",
}
_SERVICE_NAME = re.compile(r"[A-Za-z0-9_./\-]+")
_TAG_NAME = re.compile(r"[A-Za-z0-9_.]+")
_FORM_FIELDS = ("profile", "prev_profile", "sample_type_config")


@dataclass(frozen=True)
class AppName:
    """A parsed `name=` parameter: the application, its type suffix (if any) and its tags."""

    app: str
    suffix: str | None
    tags: dict[str, str]


@dataclass(frozen=True)
class SampleTypeConfig:
    """One entry of `sample_type_config`, as the SDKs send it."""

    units: str = ""
    aggregation: str = ""  # "sum" or "average"
    display_name: str = ""
    sampled: bool = False
    cumulative: bool = False


@dataclass(frozen=True)
class IngestRequest:
    """What one SDK request becomes: the arguments of `Ingester.push`."""

    labels: dict[str, str]
    profile: bytes
    name_hint: str | None
    span: tuple[int, int] | None  # (from, until) in ns, when the request gives them


def is_pyroscope_request(query: Mapping[str, str]) -> bool:
    return "name" in query


async def ingest(push: Push, tenant: str, query: Mapping[str, str], content_type: str | None,
                 body: bytes) -> tuple[int, int]:
    """Convert one SDK request and push it; returns what `push` returns (typed profiles, bytes)."""
    request = convert(query, content_type, body)
    # A profile that does not decode is a PprofError, 400 as in our own form and on every push path.
    return await push(tenant, [(request.labels, [("", request.profile)])], request.name_hint, span=request.span)


def convert(query: Mapping[str, str], content_type: str | None, body: bytes) -> IngestRequest:
    """The push input of one request, or the error that refuses it (see the module docstring)."""
    name = parse_app_name(query.get("name", ""))
    span = parse_span(query.get("from"), query.get("until"))
    parse_sample_rate(query.get("sampleRate"))
    fields = read_body(query.get("format"), content_type, body)
    config = parse_sample_type_config(fields.get("sample_type_config"))
    if fields.get("prev_profile"):
        raise UnprocessableError("prev_profile: cumulative profiles sent with their previous profile are not "
                                 "supported; update the SDK (pyroscope-go 0.37 and later send deltas)")
    return IngestRequest(series_labels(name, query.get("spyName")), fields["profile"],
                         name_hint(name, config), span)


# ---------------------------------------------------------------------------- name=


def parse_app_name(text: str) -> AppName:
    """`app.cpu{k=v,k2=v2}` -> AppName("app", "cpu", {...}); ValueError naming the problem."""
    head, brace, rest = text.partition("{")
    app = head.strip()
    if not app:
        raise ValueError(f'name="{text}": the application name is empty; expected name=app{{k=v,...}}')
    if not _SERVICE_NAME.fullmatch(app):
        raise ValueError(f'name="{text}": application name "{app}" may hold only letters, digits and _ . / -')
    tags = _parse_tags(text, rest) if brace else {}
    stem, dot, suffix = app.rpartition(".")
    if dot and stem and suffix in SUFFIX_NAMES:
        return AppName(stem, suffix, tags)
    return AppName(app, None, tags)


def _parse_tags(text: str, rest: str) -> dict[str, str]:
    inside, closing, after = rest.partition("}")
    if not closing:
        raise ValueError(f'name="{text}": the tags have no closing "}}"')
    if after.strip():
        raise ValueError(f'name="{text}": unexpected "{after}" after the tags')
    tags: dict[str, str] = {}
    for item in filter(str.strip, inside.split(",")):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not _TAG_NAME.fullmatch(key):
            raise ValueError(f'name="{text}": bad tag "{item}": expected key=value, the key of letters, '
                             "digits, _ and .")
        if value.strip():  # an empty value means no tag, as the SDKs treat it
            tags[key] = value.strip()
    return tags


def series_labels(name: AppName, spy: str | None) -> dict[str, str]:
    """The series labels of a parsed name (see the module docstring)."""
    labels: dict[str, str] = {}
    for key, value in name.tags.items():
        label = label_name(key)
        if label.startswith("__") and label != SESSION_LABEL:  # `_.x` too, which becomes `__x`
            continue
        if label in labels:
            raise ValueError(f'tags "{key}" and another one both become the label "{label}" ("." is written "_")')
        labels[label] = value
    labels[APP_LABEL if SERVICE_LABEL in labels else SERVICE_LABEL] = name.app
    if spy:
        labels[SPY_LABEL] = spy
    return labels


def name_hint(name: AppName, config: Mapping[str, SampleTypeConfig]) -> str | None:
    """The profile name the request suggests: its suffix's, or else the sample type config's."""
    if name.suffix:
        return SUFFIX_NAMES[name.suffix]
    for sample_type, entry in config.items():
        hint = _name_of_sample_type(entry.display_name or sample_type)
        if hint:
            return hint
    return None


def _name_of_sample_type(text: str) -> str | None:
    """Pyroscope's rule from a sample type (or its display name) to a profile name."""
    if text == "wall":
        return "wall"
    for part, name in (("cpu", "process_cpu"), ("alloc_", "memory"), ("inuse_", "memory"),
                       ("mutex_", "mutex"), ("block_", "block"), ("goroutine", "goroutine")):
        if part in text:
            return name
    return None


# ---------------------------------------------------------------------------- other parameters


def parse_span(start: str | None, end: str | None) -> tuple[int, int] | None:
    """`from` and `until` in ns, or None when either is missing; ValueError when they do not parse.
    An `until` before `from` is taken as `from`, as Pyroscope does not check the order either."""
    if not start or not end:
        return None
    times = []
    for key, text in (("from", start), ("until", end)):
        try:
            times.append(parse_time(text))
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from exc
    # pyroscope-go's last upload of a session can end (whole seconds) before it starts: no duration then.
    return times[0], max(times[0], times[1])


def parse_sample_rate(text: str | None) -> int | None:
    """Samples per second, None when not given; pyroscope-go sends 0 for its non-CPU uploads."""
    if not text:
        return None
    if not text.isascii() or not text.isdigit():
        raise ValueError(f'sampleRate="{text}": expected a whole number of samples per second')
    return int(text) or None


def parse_sample_type_config(raw: bytes | None) -> dict[str, SampleTypeConfig]:
    """The `sample_type_config` form field; ValueError naming the entry and key that are wrong.

    Keys the SDKs may add later are ignored; known keys must have the types the SDKs send."""
    if raw is None:
        return {}
    try:
        document = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"sample_type_config: not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError("sample_type_config: expected a JSON object of sample type -> settings")
    return {sample_type: _config_entry(sample_type, entry) for sample_type, entry in document.items()}


_CONFIG_KEYS = {"units": ("units", str), "aggregation": ("aggregation", str), "display-name": ("display_name", str),
                "sampled": ("sampled", bool), "cumulative": ("cumulative", bool)}


def _config_entry(sample_type: str, entry: object) -> SampleTypeConfig:
    where = f'sample_type_config["{sample_type}"]'
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected an object such as {{\"units\": \"bytes\"}}")
    fields = {}
    for key, (field, kind) in _CONFIG_KEYS.items():
        if key in entry and entry[key] is not None:
            if not isinstance(entry[key], kind):
                raise ValueError(f"{where}.{key}: expected a {'string' if kind is str else 'boolean'}")
            fields[field] = entry[key]
    if fields.get("aggregation", "sum") not in ("", "sum", "average"):
        raise ValueError(f'{where}.aggregation: "{fields["aggregation"]}" is not "sum" or "average"')
    return SampleTypeConfig(**fields)


# ---------------------------------------------------------------------------- body


def read_body(fmt: str | None, content_type: str | None, body: bytes) -> dict[str, bytes]:
    """The profile (and the other form fields) of the body, by `format=` and the content type."""
    fmt = (fmt or "").strip().lower()
    if fmt in UNSUPPORTED_FORMATS:
        raise UnsupportedFormatError(UNSUPPORTED_FORMATS[fmt])
    if fmt not in ("", "pprof"):
        raise ValueError(f'unknown format "{fmt}": Flamewatch reads format=pprof (raw body or multipart form)')
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime == "multipart/form-data":
        return parse_form(content_type or "", body)
    if not fmt:
        raise UnsupportedFormatError(UNSUPPORTED_FORMATS["groups"])
    return {"profile": body}


def parse_form(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body; UnprocessableError when it is not one.

    Parts are found with `bytes.find` and each field copied out once: a 16 MiB form costs one copy."""
    boundary = _boundary(content_type)
    delimiter = b"\r\n--" + boundary  # the line break before a boundary belongs to the delimiter
    pos = 0 if body.startswith(delimiter[2:]) else body.find(delimiter) + 2
    if pos == 1:
        raise UnprocessableError(f'multipart form: the boundary "{boundary.decode("latin-1")}" is not in the body')
    pos += len(delimiter) - 2
    fields: dict[str, bytes] = {}
    while not body.startswith(b"--", pos):
        end = body.find(delimiter, pos)
        if end < 0:
            raise UnprocessableError("multipart form: no closing boundary; the body is cut short")
        name, value = _form_part(body, pos, end)
        fields[name] = value
        pos = end + len(delimiter)
    if not fields.get("profile"):
        raise UnprocessableError("multipart form: no profile field (expected profile, and optionally "
                                 "sample_type_config)")
    return fields


def _boundary(content_type: str) -> bytes:
    match = re.search(r';\s*boundary=(?:"([^"]+)"|([^;\s]+))', content_type, re.IGNORECASE)
    if not match:
        raise ValueError("Content-Type multipart/form-data without a boundary parameter")
    return (match.group(1) or match.group(2)).encode("latin-1")


def _form_part(body: bytes, start: int, end: int) -> tuple[str, bytes]:
    """(field name, content) of the part between a boundary at `start` and the next delimiter at `end`."""
    if not body.startswith(b"\r\n", start):
        raise UnprocessableError("multipart form: a boundary is not followed by a line break")
    head_end = body.find(b"\r\n\r\n", start, end)
    if head_end < 0:
        raise UnprocessableError("multipart form: a part has no blank line after its headers")
    match = re.search(rb'content-disposition:[^\r\n]*?;\s*name="([^"]*)"', body[start:head_end], re.IGNORECASE)
    if not match:
        raise UnprocessableError("multipart form: a part has no Content-Disposition name")
    return match.group(1).decode("utf-8", "replace"), body[head_end + 4:end]
