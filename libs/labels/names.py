"""The names of the labels every series has, and the value a missing service takes.

The ingester writes them, the collector and the push adapters fill them in, and the querier relies on
them being on every series (a matcher on one of them can never be a label the series lacks).
"""

NAME_LABEL = "__name__"  # the profile's name: process_cpu, memory, goroutine, ...
TYPE_LABEL = "__profile_type__"  # the profile type id, name:sample_type:sample_unit:period_type:period_unit
SERVICE_LABEL = "service_name"  # the application, as Pyroscope and OpenTelemetry name it
DEFAULT_SERVICE = "unknown_service"  # OpenTelemetry's name for a service that gave none

SERIES_LABELS = frozenset({NAME_LABEL, TYPE_LABEL, SERVICE_LABEL})
