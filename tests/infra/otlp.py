"""OTLP profiles as an OpenTelemetry SDK sends them, for tests that check they are told apart from pprof."""

import gzip

from opentelemetry.proto.collector.profiles.v1development import profiles_service_pb2 as otlp_service
from opentelemetry.proto.common.v1 import common_pb2 as otlp_common


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
