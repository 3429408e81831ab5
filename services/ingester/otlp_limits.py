"""The limits of an OTLP export request, checked before anything of it is converted.

Converting walks samples and dictionary entries in Python, so a small gzipped request that holds
millions of them would cost seconds of CPU before the limits checked on each converted pprof could
refuse it. Here every count is read from the parsed message (a `len()` of a repeated field costs
nothing) and each walk starts only once the counts it depends on are known to be within the limits:

- resources, scopes and profiles: at most `max_profiles_per_push` each (413, the whole request);
- samples of one profile: at most `max_samples` (that profile is refused alone, as a pprof over the
  limit would be);
- everything conversion reads one by one (samples with their values, timestamps and attribute indices,
  dictionary entries, stack frames, location lines): at most `max_otlp_entries` (413, the whole request).

Stack depth is checked on each profile's stacks as soon as its samples' stack indices are read
(`otlp._profile`), before any symbol, label or pprof is built.

OTLP/JSON costs more: protobuf's JSON parser walks every value in Python (about 5 µs a sample), so the
same counts are taken on the decoded JSON document before it is parsed into a request, and a profile
over `max_samples` refuses the whole request there (its samples would be paid for before it could be
set aside).
"""

from __future__ import annotations

from opentelemetry.proto.collector.profiles.v1development.profiles_service_pb2 import ExportProfilesServiceRequest
from opentelemetry.proto.profiles.v1development.profiles_pb2 import Profile as OtlpProfile

from flamewatch.ingester.config import IngestLimits
from flamewatch.pprof import LimitExceeded

_TABLES = ("string_table", "stack_table", "location_table", "function_table", "mapping_table", "attribute_table",
           "link_table")


def check_counts(request: ExportProfilesServiceRequest, limits: IngestLimits) -> None:
    """Refuse the whole request when it holds more profiles or entries than the limits allow."""
    resources = request.resource_profiles
    _at_most(len(resources), limits.max_profiles_per_push, "resource_profiles", "--limits.max-profiles-per-push")
    scopes = [s for r in resources for s in r.scope_profiles]
    _at_most(len(scopes), limits.max_profiles_per_push, "scope_profiles", "--limits.max-profiles-per-push")
    profiles = [p for s in scopes for p in s.profiles]
    _at_most(len(profiles), limits.max_profiles_per_push, "profiles", "--limits.max-profiles-per-push")
    d = request.dictionary
    entries = sum(len(getattr(d, table)) for table in _TABLES)
    entries += sum(len(p.samples) for p in profiles if len(p.samples) <= limits.max_samples)
    _entries_at_most(entries, limits)
    # Each walk below is bounded by a count already checked.
    entries += sum(len(s.location_indices) for s in d.stack_table)
    entries += sum(len(loc.lines) for loc in d.location_table)
    _entries_at_most(entries, limits)
    entries += sum(_sample_items(p) for p in profiles if len(p.samples) <= limits.max_samples)
    _entries_at_most(entries, limits)


def check_json_counts(document: dict, limits: IngestLimits) -> None:
    """`check_counts` on an OTLP/JSON document (camelCase or the proto field names), before it is parsed."""
    resources = _json_items(document, "resourceProfiles", "resource_profiles")
    _at_most(len(resources), limits.max_profiles_per_push, "resource_profiles", "--limits.max-profiles-per-push")
    scopes = [(r, s, scope) for r, resource in enumerate(resources)
              for s, scope in enumerate(_json_items(resource, "scopeProfiles", "scope_profiles"))]
    _at_most(len(scopes), limits.max_profiles_per_push, "scope_profiles", "--limits.max-profiles-per-push")
    profiles = [(f"resource_profiles[{r}].scope_profiles[{s}].profiles[{p}]", profile) for r, s, scope in scopes
                for p, profile in enumerate(_json_items(scope, "profiles"))]
    _at_most(len(profiles), limits.max_profiles_per_push, "profiles", "--limits.max-profiles-per-push")
    samples = []
    for where, profile in profiles:
        own = _json_items(profile, "samples")
        if len(own) > limits.max_samples:
            raise LimitExceeded(f"{where}: profile has {len(own)} samples, the limit is {limits.max_samples} "
                                "(--limits.max-samples)")
        samples += own
    d = document.get("dictionary") if isinstance(document.get("dictionary"), dict) else {}
    entries = len(samples) + sum(len(_json_items(d, _camel(t), t)) for t in _TABLES)
    _entries_at_most(entries, limits)
    entries += sum(len(_json_items(s, "locationIndices", "location_indices"))
                   for s in _json_items(d, "stackTable", "stack_table"))
    entries += sum(len(_json_items(loc, "lines")) for loc in _json_items(d, "locationTable", "location_table"))
    _entries_at_most(entries, limits)
    entries += sum(len(_json_items(s, "values")) + len(_json_items(s, "timestampsUnixNano", "timestamps_unix_nano"))
                   + len(_json_items(s, "attributeIndices", "attribute_indices")) for s in samples)
    _entries_at_most(entries, limits)


def _json_items(owner: object, *keys: str) -> list:
    """The list under the first of `keys` present in a JSON object; [] for anything else (the parser that
    comes next names what is malformed)."""
    if not isinstance(owner, dict):
        return []
    value = next((owner[k] for k in keys if k in owner), [])
    return value if isinstance(value, list) else []


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def check_samples(profile: OtlpProfile, limits: IngestLimits) -> None:
    """One profile's sample count, before anything of it is read."""
    if len(profile.samples) > limits.max_samples:
        raise LimitExceeded(f"profile has {len(profile.samples)} samples, the limit is {limits.max_samples} "
                            "(--limits.max-samples)")


def check_depth(depth_of_each_sample, limits: IngestLimits) -> None:
    """The deepest stack a profile's samples use (numpy array of depths)."""
    if len(depth_of_each_sample) and depth_of_each_sample.max() > limits.max_stack_depth:
        i = int(depth_of_each_sample.argmax())
        raise LimitExceeded(f"samples[{i}] has a stack {depth_of_each_sample[i]} frames deep, the limit is "
                            f"{limits.max_stack_depth} (--limits.max-stack-depth)")


def _sample_items(profile: OtlpProfile) -> int:
    return sum(len(s.values) + len(s.timestamps_unix_nano) + len(s.attribute_indices) for s in profile.samples)


def _at_most(count: int, limit: int, what: str, flag: str) -> None:
    if count > limit:
        raise LimitExceeded(f"the export holds {count} {what}, the limit is {limit} per request ({flag})")


def _entries_at_most(entries: int, limits: IngestLimits) -> None:
    if entries > limits.max_otlp_entries:
        raise LimitExceeded(f"the export holds more than {limits.max_otlp_entries} entries (samples with their "
                            "values, timestamps and attributes, dictionary entries, stack frames and lines), the "
                            "limit (--limits.max-otlp-entries); send smaller exports more often")
