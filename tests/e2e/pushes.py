"""What the e2e tests push, and which series, profile types and merges that should produce.

`GO_PROFILES` is what Go's `net/http/pprof` serves, independently of Flamewatch: per profile its
name in Flamewatch (Pyroscope's), sample types and period type. A `Push` is one pprof sent to one
tenant with the labels the sender gave; `Pushes` derives the series each push must land in.
"""

from __future__ import annotations

import gzip
import secrets
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from infra.stringtable import interner

from flamewatch.api.perftools.profiles import profile_pb2


@dataclass(frozen=True)
class GoProfile:
    name: str
    sample_types: tuple[tuple[str, str], ...]
    period_type: tuple[str, str]

    def type_ids(self) -> list[str]:
        return [":".join((self.name, t, u, *self.period_type)) for t, u in self.sample_types]


_MEMORY = GoProfile("memory", (("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"),
                               ("inuse_space", "bytes")), ("space", "bytes"))
GO_PROFILES = {
    "cpu": GoProfile("process_cpu", (("samples", "count"), ("cpu", "nanoseconds")), ("cpu", "nanoseconds")),
    "heap": _MEMORY,
    "allocs": _MEMORY,
    "goroutine": GoProfile("goroutine", (("goroutine", "count"),), ("goroutine", "count")),
    "mutex": GoProfile("mutex", (("contentions", "count"), ("delay", "nanoseconds")), ("contentions", "count")),
    "block": GoProfile("block", (("contentions", "count"), ("delay", "nanoseconds")), ("contentions", "count")),
}
ALL_TYPE_IDS = sorted({i for p in GO_PROFILES.values() for i in p.type_ids()})

# A function of the workload (tests/targets/workload) that every profile of a name must show.
WORKLOAD_FUNCTIONS = {
    "process_cpu": {"main.cpuFibonacci", "main.fibonacci", "main.cpuHashLoop"},
    "memory": {"main.allocChurn"},
    "goroutine": {"main.parkedGoroutine", "main.mutexContention", "main.channelBlocking"},
    "mutex": {"main.mutexContention"},
    "block": {"main.channelBlocking"},
}

DEFAULT_SERVICE = "unknown_service"


@dataclass(frozen=True)
class Push:
    tenant: str
    labels: tuple[tuple[str, str], ...]  # as sent, without __name__
    profile: str  # key of GO_PROFILES
    file: Path

    def series_labels(self) -> list[dict[str, str]]:
        go = GO_PROFILES[self.profile]
        base = {"service_name": DEFAULT_SERVICE, **dict(self.labels), "__name__": go.name}
        return [{**base, "__profile_type__": i} for i in go.type_ids()]


@dataclass
class Pushes:
    items: list[Push] = field(default_factory=list)

    def add(self, tenant: str, labels: dict[str, str], profile: str, file: Path) -> Push:
        push = Push(tenant, tuple(sorted(labels.items())), profile, file)
        self.items.append(push)
        return push

    def series(self, tenant: str) -> dict[tuple[tuple[str, str], ...], list[Path]]:
        """Label set (sorted pairs) → the files pushed into it, in push order."""
        out: dict[tuple[tuple[str, str], ...], list[Path]] = defaultdict(list)
        for push in self.items:
            if push.tenant == tenant:
                for labels in push.series_labels():
                    out[tuple(sorted(labels.items()))].append(push.file)
        return dict(out)

    def series_of_type(self, tenant: str, type_id: str) -> dict[tuple[tuple[str, str], ...], list[Path]]:
        return {k: v for k, v in self.series(tenant).items() if dict(k)["__profile_type__"] == type_id}

    def type_ids(self, tenant: str) -> list[str]:
        return sorted({dict(k)["__profile_type__"] for k in self.series(tenant)})

    def tenants(self) -> list[str]:
        return sorted({p.tenant for p in self.items})

    def sample_labels(self, tenant: str) -> dict[str, set[str]]:
        """Sample label name -> values (a number as its text) over the tenant's pushes, counting only
        samples with a value: a sample of zeros is not stored."""
        out: dict[str, set[str]] = defaultdict(set)
        for push in self.items:
            if push.tenant == tenant:
                for name, value in pprof_sample_labels(push.file.read_bytes()):
                    out[name].add(value)
        return dict(out)


def rewritten(data: bytes, *, time_ns: int, scale: int = 1, padding: int = 0) -> bytes:
    """A copy of a gzipped pprof with another time, every value multiplied by `scale`, and
    `padding` random bytes of extra (unreferenced, valid) string table entries."""
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.decompress(data))
    profile.time_nanos = time_ns
    for sample in profile.sample:
        sample.value[:] = [v * scale for v in sample.value]
    if padding:
        profile.string_table.extend(secrets.token_hex(32) for _ in range(padding // 64 + 1))
    return gzip.compress(profile.SerializeToString())


def cpu_profile(time_ns: int, samples: list[tuple[int, dict[str, str]]]) -> bytes:
    """A gzipped CPU pprof (cpu:nanoseconds) whose samples have these values and string labels (empty
    ones left out), their stacks main→work and main→idle in turn: a profile of known total."""
    p = profile_pb2.Profile(string_table=[""], time_nanos=time_ns, duration_nanos=10**9, period=10**7)
    s = interner(p)
    p.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    p.period_type.type, p.period_type.unit = s("cpu"), s("nanoseconds")
    for i, name in enumerate(["main", "work", "idle"], start=1):
        p.function.add(id=i, name=s(name), system_name=s(name), filename=s("main.go"))
        p.location.add(id=i, address=0x1000 * i).line.add(function_id=i, line=i)
    for n, (value, labels) in enumerate(samples):
        sample = p.sample.add(location_id=[2 + n % 2, 1], value=[value])
        for key, text in labels.items():
            if text:
                sample.label.add(key=s(key), str=s(text))
    return gzip.compress(p.SerializeToString())


def with_stackless_sample(data: bytes, values: list[int]) -> bytes:
    """A copy of a gzipped pprof with one more sample that has no stack (Go's goroutine profile
    sometimes reports such a goroutine)."""
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.decompress(data))
    profile.sample.add(value=values)
    return gzip.compress(profile.SerializeToString())


def profile_time_ns(data: bytes) -> int:
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.decompress(data))
    return profile.time_nanos


def pprof_sample_labels(data: bytes) -> set[tuple[str, str]]:
    """(name, value) of every label of a sample with a non-zero value."""
    profile = profile_pb2.Profile()
    profile.ParseFromString(gzip.decompress(data))
    strings = profile.string_table
    return {(strings[label.key], strings[label.str] if label.str else str(label.num))
            for sample in profile.sample if any(sample.value) for label in sample.label}
