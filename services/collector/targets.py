"""From discovered target groups to the profile endpoints to scrape, with their final labels.

Each discovered target starts from its group's labels, its own labels, `job`, `__address__` and
`__scheme__`; the job's relabel rules then rewrite, keep or drop it. Afterwards `instance` defaults to
the address, `service_name` to the job, and labels starting with `__` are removed from what is stored.
A target whose labels end with `__profile_path__` set is fetched from that path instead of each endpoint's
own: meant for jobs with one profile type, as the Helm chart's annotation-driven jobs are (Alloy's label).
"""

from __future__ import annotations

from flamewatch.collector.config import ScrapeConfig
from flamewatch.collector.scrape import ScrapeTarget
from flamewatch.collector.targetgroup import TargetGroup
from flamewatch.labels.relabel import relabel

ADDRESS, SCHEME, PROFILE_PATH = "__address__", "__scheme__", "__profile_path__"


def discovered_labels(job: ScrapeConfig, group: TargetGroup, target: dict[str, str]) -> dict[str, str]:
    return {"job": job.job_name, SCHEME: job.scheme, **group.labels, **target}


def final_labels(job: ScrapeConfig, discovered: dict[str, str]) -> dict[str, str] | None:
    """Labels after relabeling, or None when a rule dropped the target (or left it no address)."""
    labels = relabel(discovered, job.relabel_configs)
    if labels is None or not labels.get(ADDRESS):
        return None
    labels.setdefault("instance", labels[ADDRESS])
    labels.setdefault("service_name", job.job_name)
    return labels


def scrape_targets(job: ScrapeConfig, groups: list[TargetGroup]) -> list[ScrapeTarget]:
    out = []
    for group in groups:
        for target in group.targets:
            discovered = discovered_labels(job, group, target)
            labels = final_labels(job, discovered)
            if labels is not None:
                out.extend(_endpoints(job, labels, discovered))
    return out


def _endpoints(job: ScrapeConfig, labels: dict[str, str], discovered: dict[str, str]) -> list[ScrapeTarget]:
    base = f"{labels[SCHEME]}://{labels[ADDRESS]}"
    public = {k: v for k, v in labels.items() if not k.startswith("__")}
    params = {k: list(v) for k, v in job.params.items()}
    path = labels.get(PROFILE_PATH)
    return [
        ScrapeTarget(job=job.job_name, profile_name=name, url=base + (path or endpoint.path), params=params,
                     labels=public,
                     discovered=discovered, interval_s=job.scrape_interval_s, timeout_s=job.scrape_timeout_s,
                     delta=endpoint.delta, seconds=endpoint.seconds, fast_interval_s=endpoint.fast_scrape_interval_s)
        for name, endpoint in job.profiling_config.endpoints().items()
    ]
