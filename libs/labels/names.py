"""The names of the labels every series has, and the value a missing service takes.

The ingester writes them, the collector and the push adapters fill them in, and the querier relies on
them being on every series (a matcher on one of them can never be a label the series lacks).
"""

NAME_LABEL = "__name__"  # the profile's name: process_cpu, memory, goroutine, ...
TYPE_LABEL = "__profile_type__"  # the profile type id, name:sample_type:sample_unit:period_type:period_unit
SERVICE_LABEL = "service_name"  # the application, as Pyroscope and OpenTelemetry name it
DEFAULT_SERVICE = "unknown_service"  # OpenTelemetry's name for a service that gave none

SERIES_LABELS = frozenset({NAME_LABEL, TYPE_LABEL, SERVICE_LABEL})

# Labels Pyroscope keeps on every series besides ours, each a part of the profile type or the service name:
# its LabelNames lists them and its selectors take them, so ours take them too (`with_derived`), though
# they are not stored.
_TYPE_PARTS = {"__type__": 1, "__unit__": 2, "__period_type__": 3, "__period_unit__": 4}  # of name:type:unit:...
SERVICE_COPY_LABEL = "__service_name__"
DERIVED_FROM = {**{name: TYPE_LABEL for name in _TYPE_PARTS}, SERVICE_COPY_LABEL: SERVICE_LABEL}  # -> stored label
DERIVED_LABELS = frozenset(DERIVED_FROM)


def derived_label(labels: dict[str, str], name: str) -> str | None:
    """The value of a `DERIVED_LABELS` name for a series of these stored labels (None: it has none)."""
    if name == SERVICE_COPY_LABEL:
        return labels.get(SERVICE_LABEL)
    parts = labels.get(TYPE_LABEL, "").split(":")
    return parts[_TYPE_PARTS[name]] if name in _TYPE_PARTS and len(parts) == 5 else None


def with_derived(labels: dict[str, str]) -> dict[str, str]:
    """The series' stored labels and the `DERIVED_LABELS` it has."""
    derived = {name: derived_label(labels, name) for name in DERIVED_LABELS}
    return {**{k: v for k, v in derived.items() if v is not None}, **labels}
