"""Label names made from names that are not label names: OpenTelemetry attribute keys (`service.name`),
Pyroscope tags and push labels (`otel.scope.name`), Kubernetes labels and annotations (`app.kubernetes.io/name`).

The rule is Prometheus': every character outside `[A-Za-z0-9_]` becomes `_`, as Prometheus writes
OpenTelemetry attributes and Kubernetes labels. A whole label name also may not start with a digit,
so one gets a `_` before it (`2xx` → `_2xx`); a part of a name (after a prefix such as
`__meta_kubernetes_pod_label_`) keeps its digit, as Prometheus keeps it.
"""

from __future__ import annotations

import re

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")


def name_part(text: str) -> str:
    """`text` with every character outside `[A-Za-z0-9_]` written `_`: `app.kubernetes.io/name` →
    `app_kubernetes_io_name`."""
    return _NOT_IN_NAME.sub("_", text)


def label_name(text: str) -> str:
    """`text` as a whole label name: `k8s.pod.name` → `k8s_pod_name`, `2xx` → `_2xx`. An empty text stays
    empty, which label validation refuses with its own message."""
    cleaned = name_part(text)
    return f"_{cleaned}" if cleaned[:1].isdigit() else cleaned
