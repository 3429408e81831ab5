"""The ingester's settings: what one push may hold (`IngestLimits`, per tenant too), how it batches and
flushes, and its compaction and retention loop (`MaintenanceConfig`). Defaults live here only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flamewatch.pprof.validate import ProfileLimits
    from flamewatch.storage.compaction import CompactionConfig
    from flamewatch.storage.retention import RetentionPolicy

# The storage and pprof parts import numpy and pyarrow; they are imported when such a config is made, not
# with this module, so `flamewatch --help` does not pay for them.

MiB = 1 << 20
MINUTE_NS = 60 * 10**9


def _compaction() -> CompactionConfig:
    from flamewatch.storage.compaction import CompactionConfig

    return CompactionConfig()


def _retention() -> RetentionPolicy:
    from flamewatch.storage.retention import RetentionPolicy

    return RetentionPolicy()


@dataclass(frozen=True)
class IngestLimits:
    """What one push may contain, and how fast a tenant may push. Exceeding a size limit is
    RESOURCE_EXHAUSTED, the rest INVALID_ARGUMENT. Every one can be set for one tenant (`--limits.tenant`)."""

    max_compressed_bytes: int = 16 * MiB
    max_decompressed_bytes: int = 64 * MiB  # of one profile
    # Of all the profiles of one push together (Pyroscope's push.v1 and our gRPC push carry many): what one
    # push may make the ingester decompress and hold while it is checked and written
    max_push_decompressed_bytes: int = 256 * MiB
    max_samples: int = 500_000
    max_stack_depth: int = 1024
    max_profiles_per_push: int = 1000
    # OTLP: samples (with their values, timestamps and attributes) and dictionary entries of one export;
    # each costs Python work to read, so this bounds a request's CPU before its profiles are converted.
    max_otlp_entries: int = 2_000_000
    max_labels: int = 32
    max_label_name_length: int = 128
    max_label_value_length: int = 2048
    max_sample_types: int = 64  # each sample type of a pprof becomes a series of its own
    # Series of a tenant with a profile in the last hour; a push adding series beyond it is refused (Pyroscope's
    # max_global_series_per_tenant is 5000; 0 is no limit)
    max_series: int = 10_000
    # Profile times accepted: [now - reject_older_than, now + reject_newer_than] (Pyroscope's names and, for the
    # newer bound, its default). 0 for the older bound means the tenant's retention (no bound while it keeps
    # everything; times before 1970 never pass): unlike Pyroscope's 1h, so `flamewatch upload` of last month's
    # pprof files keeps working, while anything retention would drop at once is refused
    reject_older_than_ns: int = 0
    reject_newer_than_ns: int = 10 * MINUTE_NS
    # Decompressed pprof a tenant may push per second, and at once: 0 is no limit (Pyroscope's
    # ingestion_rate_limit_mb, ingestion_burst_size_mb); a burst of 0 is twice the rate, and at least
    # max_push_decompressed_bytes, so that a push of any allowed size can pass
    ingestion_rate_mb: float = 0.0
    ingestion_burst_mb: float = 0.0

    def ingestion_rate(self) -> tuple[float, float] | None:
        """(bytes per second, burst bytes) of the tenant's token bucket, or None for no rate limit."""
        if self.ingestion_rate_mb <= 0:
            return None
        rate = self.ingestion_rate_mb * 1e6
        burst = self.ingestion_burst_mb * 1e6 or max(2 * rate, self.max_push_decompressed_bytes)
        return rate, burst

    def profile_limits(self) -> ProfileLimits:
        from flamewatch.pprof.validate import ProfileLimits

        return ProfileLimits(self.max_compressed_bytes, self.max_decompressed_bytes, self.max_samples,
                             self.max_stack_depth)

    @staticmethod
    def names() -> list[str]:
        return [f.name for f in fields(IngestLimits)]


@dataclass(frozen=True)
class MaintenanceConfig:
    """The ingester's compaction and retention loop."""

    interval_s: float = 60.0  # 0: no compaction or retention in this process
    compaction: CompactionConfig = field(default_factory=_compaction)
    retention: RetentionPolicy = field(default_factory=_retention)
    retired_grace_s: float = 600.0  # longer than any query: a query may still read a block just retired


@dataclass(frozen=True)
class IngesterConfig:
    http_address: str = ":4100"
    grpc_address: str = ":4101"
    # A push waits for its flush: up to this, plus the write. Clients that push together (SDKs answering
    # on the same tick) all wait the whole interval: 0.4 s keeps their median answer under 0.5 s.
    flush_interval_s: float = 0.4
    flush_bytes: int = 8 * MiB
    max_concurrent_flushes: int = 4
    sweep_interval_s: float = 300.0
    orphan_grace_s: float = 600.0
    limits: IngestLimits = field(default_factory=IngestLimits)
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    # A tenant's own limits: tenant -> {IngestLimits field: value}, over `limits` (`--limits.tenant`)
    tenant_limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def limits_for(self, tenant: str) -> IngestLimits:
        """The tenant's limits: its overrides over the defaults, the older-than bound its retention if unset."""
        limits = replace(self.limits, **self.tenant_limits.get(tenant, {}))
        keep = self.maintenance.retention.of(tenant)
        if not limits.reject_older_than_ns and keep is not None:
            limits = replace(limits, reject_older_than_ns=keep)
        return limits
