"""OTLP profiles requests for tests: one as an OpenTelemetry SDK sends it (told apart from pprof by the
pprof decoder), and a builder of requests from function names for the OTLP ingest tests."""

import gzip

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as otlp_service
from opentelemetry.proto.common.v1 import common_pb2 as otlp_common
from opentelemetry.proto.profiles.v1development import profiles_pb2 as otlp_profiles


def otlp_export_request() -> bytes:
    """A gzipped ExportProfilesServiceRequest with one CPU profile of one sample: a protobuf, not pprof."""
    request = otlp_service.ExportProfilesServiceRequest()
    resource = request.resource_profiles.add()
    resource.resource.attributes.add(key="service.name", value=otlp_common.AnyValue(string_value="checkout"))
    profile = resource.scope_profiles.add().profiles.add()
    profile.sample_type.type_strindex, profile.sample_type.unit_strindex = 1, 2
    profile.samples.add(stack_index=0, values=[10])
    request.dictionary.string_table.extend(["", "cpu", "nanoseconds", "main"])
    return gzip.compress(request.SerializeToString())


class ExportBuilder:
    """An ExportProfilesServiceRequest built from function names: every table starts with its zero entry,
    as OTLP asks, and each stack, location and function is added once."""

    def __init__(self) -> None:
        self.request = otlp_service.ExportProfilesServiceRequest()
        d = self.request.dictionary
        d.string_table.append("")
        d.mapping_table.add()
        d.mapping_table.add(memory_start=0x400000, memory_limit=0x800000, filename_strindex=self.string("/bin/app"))
        d.function_table.add()
        d.location_table.add()
        d.stack_table.add()
        d.attribute_table.add()
        d.link_table.add()
        self._stacks: dict[tuple[str, ...], int] = {}

    def string(self, text: str) -> int:
        table = self.request.dictionary.string_table
        if text not in table:
            table.append(text)
        return list(table).index(text)

    def stack(self, *names: str) -> int:
        """The stack of these functions, leaf first."""
        if names not in self._stacks:
            d = self.request.dictionary
            locations = []
            for name in names:
                d.function_table.add(name_strindex=self.string(name), filename_strindex=self.string("app.go"))
                location = d.location_table.add(mapping_index=1, address=0x401000 + 16 * len(d.location_table))
                location.lines.add(function_index=len(d.function_table) - 1, line=len(d.location_table))
                locations.append(len(d.location_table) - 1)
            d.stack_table.add(location_indices=locations)
            self._stacks[names] = len(d.stack_table) - 1
        return self._stacks[names]

    def attribute(self, key: str, value: str | int, unit: str = "") -> int:
        d = self.request.dictionary
        any_value = otlp_common.AnyValue(int_value=value) if isinstance(value, int) else \
            otlp_common.AnyValue(string_value=value)
        d.attribute_table.add(key_strindex=self.string(key), value=any_value, unit_strindex=self.string(unit))
        return len(d.attribute_table) - 1

    def link(self, trace_id: bytes, span_id: bytes) -> int:
        self.request.dictionary.link_table.add(trace_id=trace_id, span_id=span_id)
        return len(self.request.dictionary.link_table) - 1

    def profile(self, resource: dict[str, str], scope: dict[str, str] | None = None, time_ns: int = 0):
        """A CPU profile ("samples"/"count", period type cpu) in a resource of its own; add samples to it."""
        resource_profiles = self.request.resource_profiles.add()
        for key, value in resource.items():
            resource_profiles.resource.attributes.add(key=key, value=otlp_common.AnyValue(string_value=value))
        scope_profiles = resource_profiles.scope_profiles.add()
        for key, value in (scope or {}).items():
            scope_profiles.scope.attributes.add(key=key, value=otlp_common.AnyValue(string_value=value))
        profile = scope_profiles.profiles.add(time_unix_nano=time_ns, duration_nano=10**9, period=10**7)
        profile.sample_type.type_strindex, profile.sample_type.unit_strindex = self.string("samples"), \
            self.string("count")
        profile.period_type.type_strindex, profile.period_type.unit_strindex = self.string("cpu"), \
            self.string("nanoseconds")
        return profile


def many_samples(n: int) -> bytes:
    """A gzipped export of one profile with n samples of one stack: 6.4 KB for 600k samples."""
    b = ExportBuilder()
    profile = b.profile({"service.name": "big"}, time_ns=1_700_000_000_000_000_000)
    one = otlp_profiles.Profile()
    one.samples.add(stack_index=b.stack("work", "main"), values=[1])
    # Merged as bytes (repeated fields append): adding 600k messages one by one would take seconds.
    profile.MergeFromString(one.SerializeToString() * n)
    return gzip.compress(b.request.SerializeToString(), 9)
