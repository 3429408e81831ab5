"""Helpers that start and drive the real parts the tests run against.

`tests/conftest.py` turns these into fixtures. Each module owns one part:

- `ports`: free TCP ports on the loopback interface.
- `postgres`: a Postgres server (given by DSN or embedded via `pgserver`) and fresh databases on it.
- `minio`: a MinIO server process that can be stopped and started again on the same port.
- `gotargets`: building, running and scraping the Go programs under `tests/targets/`.
- `gotool`: reading pprof files with `go tool pprof`, independently of Flamewatch's own decoder.
- `helm`: the `helm` binary rendering and linting the chart under `deploy/helm/`.
- `alertmanager`: a Prometheus Alertmanager notifying a webhook receiver the test runs.
- `kubeapi`: etcd and a kube-apiserver with a token, RBAC and a kubeconfig for the Kubernetes tests.
- `kubenode`: a one-node cluster (kubelet, containerd, CoreDNS, ...) in a network namespace of its own.
- `docker`: the Docker engine, locally built base images and this checkout's images.
- `readme`: the README's shell blocks that tests run as written.
- `leftovers`: work directories outside pytest's root, and stopping what a killed session left running.
"""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".cache"
