"""The scrape configuration `flamewatch all` uses without `--config.file`: this process's own
`/debug/pprof` endpoints, scraped as any target is, with the credential and TLS its other clients use
(`rpc.channels.identity()`): the in-process token when credentials are required, and https with the web
configuration file's `client.tls_config` when its ports speak TLS.
"""

from __future__ import annotations

import yaml

from flamewatch.rpc.channels import ClientIdentity


def self_scrape_config(address: str, heap: bool, identity: ClientIdentity) -> str:
    """YAML for one job scraping `address` (host:port): CPU, and the heap only when it is tracked."""
    job: dict = {"job_name": "flamewatch", "scrape_interval": "15s",
                 "static_configs": [{"targets": [address], "labels": {"service_name": "flamewatch"}}],
                 "profiling_config": {"pprof_config": {
                     "memory": {"enabled": heap, "path": "/debug/pprof/heap"},
                     "goroutine": {"enabled": False}, "mutex": {"enabled": False}, "block": {"enabled": False}}}}
    kind, _, credentials = (identity.authorization or "").partition(" ")
    if credentials:
        job["authorization"] = {"type": kind, "credentials": credentials}
    if identity.tls is not None:
        tls = identity.tls
        job["scheme"] = "https"
        job["tls_config"] = {"ca_file": tls.ca_file, "cert_file": tls.cert_file, "key_file": tls.key_file,
                             "server_name": tls.server_name, "insecure_skip_verify": tls.insecure_skip_verify}
    return yaml.safe_dump({"scrape_configs": [job]}, sort_keys=False)
