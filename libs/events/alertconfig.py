"""Where and how incidents are sent as alerts: the Alertmanagers, the UI's base URL for the permalinks, and
the sender's bounds. Light on purpose: the command line reads its flags' defaults from here."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

HOUR_S = 3600.0


@dataclass(frozen=True)
class AlertingConfig:
    alertmanager_urls: tuple[str, ...] = ()  # base URLs; alerts go to <url>/api/v2/alerts of each
    external_url: str = ""  # the UI's base URL people open; "" leaves the permalink out
    # An OOM kill is a point event: its alert resolves by itself this long after it was recorded.
    resolve_timeout_s: float = HOUR_S
    bearer_token: str = ""  # for an Alertmanager behind its web.config (basic auth goes in the URL)
    queue_size: int = 1000  # alerts waiting per Alertmanager; more are dropped (and counted)
    batch_size: int = 64  # alerts per POST
    timeout_s: float = 10.0  # one POST
    first_backoff_s: float = 1.0  # after a failed POST, doubling up to max_backoff_s
    max_backoff_s: float = 30.0

    @property
    def enabled(self) -> bool:
        return bool(self.alertmanager_urls)


def parse_urls(values: list[str]) -> tuple[str, ...]:
    """The Alertmanager URLs of repeated and comma-separated flags; ValueError names a bad one."""
    urls = [u.strip().rstrip("/") for value in values for u in value.split(",") if u.strip()]
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--alertmanager.url {redacted(url)!r} is not an http(s) URL such as "
                             "http://alertmanager:9093")
    return tuple(dict.fromkeys(urls))


def parse_external_url(value: str) -> str:
    if not value:
        return ""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--web.external-url {value!r} is not an http(s) URL such as https://flamewatch.example.com")
    return value.rstrip("/")


def redacted(url: str) -> str:
    """The URL without the password of its user info, for logs and messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=f"{parts.username}:xxxxx@{parts.netloc.rpartition('@')[2]}").geturl()
