"""OTLP profiles (`opentelemetry.proto.profiles.v1development`) converted to pprof profiles for `Ingester.push`.

An export request holds one dictionary (strings, functions, mappings, locations, stacks, attributes,
links) shared by every profile in it, and profiles grouped by resource and instrumentation scope.
Each OTLP profile becomes one pprof profile holding only the part of the dictionary its samples use:
OTLP's 0-based table indices become pprof ids (index + 1; the zero mapping, index 0, is "no mapping"),
its sample type, period and time are copied, and

- `service.name` becomes `service_name`; other resource, scope and profile attributes become series
  labels, their names with every character outside `[A-Za-z0-9_]` replaced by `_`;
- sample attributes become pprof sample labels named the same way (integers as numeric labels with
  their unit), and a
  sample's link becomes the `trace_id` and `span_id` labels, so storage keeps them per sample;
- a sample's value is the sum of its values, or its number of timestamps when it has no values.

The dictionary is read into numpy columns once per request, and each profile is cut out of it with
array operations; only reading the protobuf fields of samples and dictionary entries walks them in Python.
A profile that breaks a rule is rejected alone, with a message naming it and the rule (`Rejected`).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass

import numpy as np
from google.protobuf import json_format
from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.profiles.v1development.profiles_pb2 import Profile as OtlpProfile
from opentelemetry.proto.profiles.v1development.profiles_pb2 import ProfilesDictionary

from flamewatch.ingester.config import IngestLimits
from flamewatch.ingester.errors import OtlpInvalidProfile
from flamewatch.ingester.otlp_limits import check_counts, check_depth, check_samples
from flamewatch.labels.sanitize import label_name
from flamewatch.pprof import Functions, LimitExceeded, Locations, Mappings, Profile, Samples, encode
from flamewatch.pprof.validate import reduceat_int64
from flamewatch.pprof.wire import expand_ranges

SERVICE_NAME_ATTRIBUTE = "service.name"
TRACE_ID_LABEL, SPAN_ID_LABEL = "trace_id", "span_id"
_NO_LATER_NS = 1 << 63  # times are int64 nanoseconds inside
_DEFAULT_LIMITS = IngestLimits()


@dataclass(frozen=True)
class Converted:
    """One OTLP profile as a pprof: `where` names it in the request (for error messages)."""

    where: str
    labels: dict[str, str]
    pprof: bytes


@dataclass(frozen=True)
class Rejected:
    where: str
    error: ValueError  # OtlpInvalidProfile, or LimitExceeded for a profile over a limit

    @property
    def reason(self) -> str:
        return str(self.error)


def convert(request: ExportProfilesServiceRequest,
            limits: IngestLimits = _DEFAULT_LIMITS) -> tuple[list[Converted], list[Rejected]]:
    """Every profile of the request as a pprof with its series labels, or the reason it was refused.

    A request over a count limit (`otlp_limits`) or whose dictionary cannot be read is refused whole
    (LimitExceeded, OtlpInvalidProfile) before anything is converted."""
    check_counts(request, limits)
    dictionary = Dictionary.read(request.dictionary)
    converted, rejected = [], []
    for where, attributes, profile in _profiles(request):
        try:
            check_samples(profile, limits)
            labels = {k: v for a in attributes for k, v in _labels(a, dictionary).items()}
            labels.update(dictionary.profile_labels(profile.attribute_indices))
            pprof = encode(_profile(profile, dictionary, limits), compress=False)
            converted.append(Converted(where, labels, pprof))
        except (OtlpInvalidProfile, LimitExceeded) as exc:
            rejected.append(Rejected(where, type(exc)(f"{where}: {exc}")))
    return converted, rejected


def _profiles(request: ExportProfilesServiceRequest):
    """(where, [resource attributes, scope attributes], profile) of every profile in the request."""
    for r, resource in enumerate(request.resource_profiles):
        for s, scope in enumerate(resource.scope_profiles):
            for p, profile in enumerate(scope.profiles):
                where = f"resource_profiles[{r}].scope_profiles[{s}].profiles[{p}]"
                yield where, [resource.resource.attributes, scope.scope.attributes], profile


def _labels(attributes, dictionary: Dictionary) -> dict[str, str]:
    out = {}
    strings = dictionary.strings[:dictionary.client_strings]  # indices may point only at the request's own
    for attribute in attributes:
        value = _text(attribute.value, strings)
        if value:  # an empty value is no label, as in Prometheus
            out[label_name(_key(attribute, strings))] = value
    return out


def _key(attribute: KeyValue, strings: list[str]) -> str:
    if attribute.key or not attribute.key_strindex:
        return attribute.key
    return _string(strings, attribute.key_strindex, "attribute key_strindex")


def _text(value: AnyValue, strings: list[str]) -> str:
    """An attribute value as label text."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "string_value_strindex":
        return _string(strings, value.string_value_strindex, "attribute string_value_strindex")
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind in ("int_value", "double_value"):
        return str(getattr(value, kind))
    if kind == "bytes_value":
        return value.bytes_value.hex()
    if kind in ("array_value", "kvlist_value"):
        return json.dumps(json_format.MessageToDict(getattr(value, kind)), separators=(",", ":"), sort_keys=True)
    return ""


def _string(strings: list[str], index: int, what: str) -> str:
    if not 0 <= index < len(strings):
        raise OtlpInvalidProfile(f"{what} {index} is outside the dictionary's string_table "
                                 f"({len(strings)} strings)")
    return strings[index]


# ------------------------------------------------------------------------------------- dictionary


@dataclass(frozen=True)
class Dictionary:
    """The request's dictionary as numpy columns; `strings` also holds the attribute values that came
    as strings rather than string indices, so every string a profile uses has an index."""

    strings: np.ndarray  # object array of str
    client_strings: int  # how many of them the request's string_table has; the rest are ours
    stack_offsets: np.ndarray  # int64 [stacks + 1]
    stack_locations: np.ndarray  # int64 location indices, leaf first
    location_mapping: np.ndarray
    location_address: np.ndarray  # uint64
    line_offsets: np.ndarray  # int64 [locations + 1]
    line_function: np.ndarray
    line_line: np.ndarray
    line_column: np.ndarray
    function_columns: np.ndarray  # int64 [functions, 4]: name, system name, file name, start line
    mapping_columns: np.ndarray  # uint64 [mappings, 3]: start, limit, file offset
    mapping_filename: np.ndarray  # int64 string index
    attribute_key: np.ndarray  # int64 string index
    attribute_str: np.ndarray  # int64 string index, 0 for an integer value
    attribute_num: np.ndarray  # int64
    attribute_unit: np.ndarray  # int64 string index
    attribute_text: list[tuple[str, str]]  # (label name, value) of each attribute, for profile attributes
    link_strings: np.ndarray  # int64 [links, 2]: string indices of the trace and span id (hex)
    link_keys: tuple[int, int]  # string indices of "trace_id" and "span_id"

    @classmethod
    def read(cls, d: ProfilesDictionary) -> Dictionary:
        strings = list(d.string_table)
        stack_offsets, stack_locations = _ragged([s.location_indices for s in d.stack_table])
        line_offsets, lines = _ragged([[(ln.function_index, ln.line, ln.column) for ln in loc.lines]
                                       for loc in d.location_table], width=3)
        client_strings = len(strings)
        attributes = _Attributes.read(d.attribute_table, strings)
        strings += attributes.extra_strings
        links = [(link.trace_id.hex(), link.span_id.hex()) for link in d.link_table]
        link_strings = len(strings) + np.arange(2 * len(links), dtype=np.int64).reshape(-1, 2)
        strings += [*itertools.chain.from_iterable(links), TRACE_ID_LABEL, SPAN_ID_LABEL]
        return cls(
            strings=np.array(strings, object), client_strings=client_strings,
            stack_offsets=stack_offsets, stack_locations=stack_locations,
            location_mapping=np.fromiter((loc.mapping_index for loc in d.location_table), np.int64),
            location_address=np.fromiter((loc.address for loc in d.location_table), np.uint64),
            line_offsets=line_offsets, line_function=lines[:, 0], line_line=lines[:, 1], line_column=lines[:, 2],
            function_columns=np.array([(f.name_strindex, f.system_name_strindex, f.filename_strindex, f.start_line)
                                       for f in d.function_table], np.int64).reshape(-1, 4),
            mapping_columns=np.array([(m.memory_start, m.memory_limit, m.file_offset) for m in d.mapping_table],
                                     np.uint64).reshape(-1, 3),
            mapping_filename=np.fromiter((m.filename_strindex for m in d.mapping_table), np.int64),
            attribute_key=attributes.key, attribute_str=attributes.str, attribute_num=attributes.num,
            attribute_unit=attributes.unit, attribute_text=attributes.text,
            link_strings=link_strings, link_keys=(len(strings) - 2, len(strings) - 1),
        )

    def profile_labels(self, indices) -> dict[str, str]:
        out = {}
        for i in indices:
            _check_range(np.array([i]), len(self.attribute_text), "attribute_indices", "attribute_table")
            name, value = self.attribute_text[i]
            if value:
                out[name] = value
        return out


def _ragged(rows: list, width: int = 0, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """Offsets [len(rows) + 1] and the concatenated items of a list of lists (of `width`-tuples if > 0)."""
    offsets = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, rows), np.int64, count=len(rows)), out=offsets[1:])
    items = list(itertools.chain.from_iterable(rows))
    if width:
        return offsets, np.array(items, dtype).reshape(-1, width)
    return offsets, np.array(items, dtype)


@dataclass(frozen=True)
class _Attributes:
    key: np.ndarray
    str: np.ndarray
    num: np.ndarray
    unit: np.ndarray
    text: list[tuple[str, str]]
    extra_strings: list[str]

    @classmethod
    def read(cls, table, strings: list[str]) -> _Attributes:
        """Keys become label names (`thread.name` is `thread_name`, so a selector can name it); integers
        stay numbers (pprof numeric labels) and every other value becomes a string label. Texts that are
        not in the string table are appended to it."""
        n = len(table)
        key, value, num, unit = (np.zeros(n, np.int64) for _ in range(4))
        text, extra = [], _Interner(len(strings))
        for i, attribute in enumerate(table):
            unit[i] = attribute.unit_strindex
            _string(strings, attribute.unit_strindex, "attribute_table unit_strindex")
            name = label_name(_string(strings, attribute.key_strindex, "attribute_table key_strindex"))
            key[i] = extra.index(name) if name != strings[attribute.key_strindex] else attribute.key_strindex
            kind = attribute.value.WhichOneof("value")
            if kind == "int_value":
                num[i] = attribute.value.int_value
            elif kind == "string_value_strindex":
                value[i] = attribute.value.string_value_strindex
                _string(strings, value[i], "attribute string_value_strindex")
            else:
                value[i] = extra.index(_text(attribute.value, strings))
            text.append((name, _text(attribute.value, strings)))
        return cls(key, value, num, unit, text, extra.strings)


class _Interner:
    """Indices for strings appended after a table of `base` strings."""

    def __init__(self, base: int):
        self._base, self._index, self.strings = base, {}, []

    def index(self, text: str) -> int:
        if text not in self._index:
            self._index[text] = self._base + len(self.strings)
            self.strings.append(text)
        return self._index[text]


# ---------------------------------------------------------------------------------------- profile


def _profile(p: OtlpProfile, d: Dictionary, limits: IngestLimits) -> Profile:
    stack, values, times = _sample_columns(p)
    _check_range(stack, len(d.stack_offsets) - 1, "samples[].stack_index", "stack_table")
    depth = d.stack_offsets[stack + 1] - d.stack_offsets[stack]
    check_depth(depth, limits)
    sample_locations = d.stack_locations[expand_ranges(d.stack_offsets[stack], depth)]
    _check_range(sample_locations, len(d.location_mapping), "stack_table[].location_indices", "location_table")
    offsets = np.zeros(len(stack) + 1, np.int64)
    np.cumsum(depth, out=offsets[1:])
    locations, functions, mappings = _symbols(np.unique(sample_locations), d)
    samples = _samples(p, d, offsets, sample_locations, values)
    sample_type = np.array([[p.sample_type.type_strindex, p.sample_type.unit_strindex]], np.int64)
    period_type = (p.period_type.type_strindex, p.period_type.unit_strindex)
    time_nanos = p.time_unix_nano or (int(times.min()) if len(times) else 0)
    if time_nanos >= _NO_LATER_NS:
        raise OtlpInvalidProfile(f"time {time_nanos} ns is after the year 2262, the last time we store")
    if p.duration_nano >= _NO_LATER_NS:  # uint64 in OTLP, int64 in pprof
        raise OtlpInvalidProfile(f"duration_nano {p.duration_nano} is longer than int64 nanoseconds (292 years)")
    return _compact_strings(d.client_strings, Profile(
        strings=d.strings, sample_types=sample_type, samples=samples, locations=locations,
        functions=functions, mappings=mappings, period_type=period_type, period=p.period,
        time_nanos=time_nanos, duration_nanos=p.duration_nano))


def _sample_columns(p: OtlpProfile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample: its stack index and value; and all sample timestamps."""
    samples = p.samples
    n = len(samples)
    stack = np.fromiter((s.stack_index for s in samples), np.int64, count=n)
    value_offsets, flat_values = _ragged([s.values for s in samples])
    time_offsets, times = _ragged([s.timestamps_unix_nano for s in samples], dtype=np.uint64)
    sums, over = reduceat_int64(np.append(flat_values, 0), value_offsets[:-1])
    has_values = np.diff(value_offsets) > 0
    if (over & has_values).any():
        i = int(np.flatnonzero(over & has_values)[0])
        raise OtlpInvalidProfile(f"samples[{i}].values add up past the int64 range (±{1 << 63})")
    values = np.where(has_values, sums, np.diff(time_offsets))
    return stack, values.astype(np.int64), times


def _symbols(used: np.ndarray, d: Dictionary) -> tuple[Locations, Functions, Mappings]:
    """The locations a profile uses, and the functions and mappings those use; ids are index + 1."""
    line_count = d.line_offsets[used + 1] - d.line_offsets[used]
    line_at = expand_ranges(d.line_offsets[used], line_count)
    function_index = d.line_function[line_at]
    _check_range(function_index, len(d.function_columns), "location_table[].lines[].function_index",
                 "function_table")
    mapping_index = d.location_mapping[used]
    _check_range(mapping_index, len(d.mapping_columns), "location_table[].mapping_index", "mapping_table")
    line_offsets = np.zeros(len(used) + 1, np.int64)
    np.cumsum(line_count, out=line_offsets[1:])
    locations = Locations(
        id=(used + 1).astype(np.uint64), mapping_id=np.where(mapping_index > 0, mapping_index + 1, 0).astype(np.uint64),
        address=d.location_address[used], is_folded=np.zeros(len(used), bool), line_offsets=line_offsets,
        line_function_id=(function_index + 1).astype(np.uint64), line_line=d.line_line[line_at],
        line_column=d.line_column[line_at])
    mappings = _mappings(np.unique(mapping_index[mapping_index > 0]), d)
    return locations, _functions(np.unique(function_index), d), mappings


def _functions(used: np.ndarray, d: Dictionary) -> Functions:
    columns = d.function_columns[used]
    return Functions(id=(used + 1).astype(np.uint64), name=columns[:, 0], system_name=columns[:, 1],
                     filename=columns[:, 2], start_line=columns[:, 3])


def _mappings(used: np.ndarray, d: Dictionary) -> Mappings:
    columns = d.mapping_columns[used]
    none = np.zeros(len(used), bool)
    return Mappings(id=(used + 1).astype(np.uint64), memory_start=columns[:, 0], memory_limit=columns[:, 1],
                    file_offset=columns[:, 2], filename=d.mapping_filename[used],
                    build_id=np.zeros(len(used), np.int64), has_functions=none, has_filenames=none,
                    has_line_numbers=none, has_inline_frames=none)


def _samples(p: OtlpProfile, d: Dictionary, offsets: np.ndarray, locations: np.ndarray,
             values: np.ndarray) -> Samples:
    """Sample attributes become labels; so does the link (trace and span id, as hex text)."""
    attribute_offsets, attributes = _ragged([s.attribute_indices for s in p.samples])
    _check_range(attributes, len(d.attribute_key), "samples[].attribute_indices", "attribute_table")
    owner = np.repeat(np.arange(len(values)), np.diff(attribute_offsets))
    key, text, num, unit = (d.attribute_key[attributes], d.attribute_str[attributes], d.attribute_num[attributes],
                            d.attribute_unit[attributes])
    link_owner, link_key, link_text = _link_labels(p, d)
    order = np.argsort(np.concatenate([owner, link_owner]), kind="stable")
    zeros = np.zeros(len(link_owner), np.int64)
    return Samples(
        offsets=offsets, locations=(locations + 1).astype(np.uint64), values=values.reshape(-1, 1),
        label_sample=np.concatenate([owner, link_owner])[order], label_key=np.concatenate([key, link_key])[order],
        label_str=np.concatenate([text, link_text])[order], label_num=np.concatenate([num, zeros])[order],
        label_num_unit=np.concatenate([unit, zeros])[order])


def _link_labels(p: OtlpProfile, d: Dictionary) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sample, key, value) string labels of the samples with a link: link 0 is the "no link" entry."""
    link = np.fromiter((s.link_index for s in p.samples), np.int64, count=len(p.samples))
    _check_range(link, max(len(d.link_strings), 1), "samples[].link_index", "link_table")
    linked = np.flatnonzero(link > 0)
    owner = np.repeat(linked, 2)
    keys = np.tile(np.array(d.link_keys, np.int64), len(linked))
    return owner, keys, d.link_strings[link[linked]].reshape(-1)


def _compact_strings(client_strings: int, p: Profile) -> Profile:
    """Keep only the strings the profile uses (the dictionary's table serves the whole request).

    Sample labels point at strings of the attribute and link tables, checked when they were read; the
    other references come as they were sent and must point into the request's own string_table."""
    sent = {"sample_type": p.sample_types.reshape(-1), "period_type": np.array(p.period_type, np.int64),
            "function_table[].name_strindex": p.functions.name,
            "function_table[].system_name_strindex": p.functions.system_name,
            "function_table[].filename_strindex": p.functions.filename,
            "mapping_table[].filename_strindex": p.mappings.filename}
    for what, ref in sent.items():
        _check_range(ref, client_strings, what, "string_table")
    refs = [*sent.values(), p.samples.label_key, p.samples.label_str, p.samples.label_num_unit]
    used = np.unique(np.concatenate([np.zeros(1, np.int64), *refs]))
    if len(p.strings) == 0 or p.strings[0] != "":
        raise OtlpInvalidProfile('the dictionary\'s string_table must start with the empty string ""')
    position = np.zeros(len(p.strings), np.int64)
    position[used] = np.arange(len(used))
    new = lambda ref: position[ref]  # noqa: E731
    samples, functions, mappings = p.samples, p.functions, p.mappings
    return Profile(
        strings=p.strings[used], sample_types=new(p.sample_types), locations=p.locations,
        samples=Samples(samples.offsets, samples.locations, samples.values, samples.label_sample,
                        new(samples.label_key), new(samples.label_str), samples.label_num,
                        new(samples.label_num_unit)),
        functions=Functions(functions.id, new(functions.name), new(functions.system_name), new(functions.filename),
                            functions.start_line),
        mappings=Mappings(mappings.id, mappings.memory_start, mappings.memory_limit, mappings.file_offset,
                          new(mappings.filename), mappings.build_id, mappings.has_functions, mappings.has_filenames,
                          mappings.has_line_numbers, mappings.has_inline_frames),
        period_type=tuple(int(x) for x in new(np.array(p.period_type))), period=p.period, time_nanos=p.time_nanos,
        duration_nanos=p.duration_nanos)


def _check_range(indices: np.ndarray, size: int, what: str, table: str) -> None:
    bad = (indices < 0) | (indices >= size)
    if bad.any():
        raise OtlpInvalidProfile(f"{what} {int(indices[bad][0])} is outside the dictionary's {table} "
                                 f"({size} entries)")
