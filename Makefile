# Every command of the project lives here. `make run` and `make test` install what is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CACHE := .cache
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := $(CACHE)/bin/minio
# pandas, apart from the virtualenv, for one test (see its rule below)
PANDAS_VERSION := 3.1.1
PANDAS_SITE := $(CACHE)/pandas-$(PANDAS_VERSION)
HELM_VERSION := v3.22.0
HELM := $(CACHE)/bin/helm
CHART := deploy/helm/flamewatch
COMPOSE_VERSION := v2.40.3
COMPOSE := $(CACHE)/bin/docker-compose
WORKLOAD := $(CACHE)/targets/workload
KUBERNETES_VERSION := v1.37.2
KUBE_APISERVER := $(CACHE)/bin/kube-apiserver
KUBE_SRC := $(CACHE)/src/kubernetes-$(KUBERNETES_VERSION)
KUBE_NODE := $(addprefix $(CACHE)/bin/,kubelet kube-scheduler kube-controller-manager kube-proxy kubectl)
COREDNS_VERSION := v1.15.0
COREDNS := $(CACHE)/bin/coredns
BUILDX_VERSION := v0.38.2
DOCKER_BUILDX := $(CACHE)/docker-config/cli-plugins/docker-buildx
CNI_PLUGINS := /usr/lib/cni/bridge
ALERTMANAGER_VERSION := v0.35.0
ALERTMANAGER := $(CACHE)/bin/alertmanager
PROMETHEUS_VERSION := v0.316.0
PROMETHEUS := $(CACHE)/bin/prometheus
ETCD := /usr/bin/etcd
PYTEST_ARGS ?=
LONG_RANGE_ARGS ?=
# pytest-xdist workers make test spreads the tests over (0: one process); most tests wait on servers they start,
# so two keep both cores of a small machine busy. Which tests share a worker: tests/conftest.py.
TEST_WORKERS ?= 2
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=

UI := services/frontend/ui
UI_BUILD := $(UI)/dist/index.html
UI_SOURCES := $(shell find $(UI)/src -type f 2>/dev/null) $(addprefix $(UI)/,index.html package.json vite.config.ts tsconfig.json)
CHROMIUM := /usr/bin/chromium
DEBUGINFOD := /usr/bin/debuginfod
GPERFTOOLS := /usr/lib/x86_64-linux-gnu/libprofiler.so
DOCKERD := /usr/sbin/dockerd
DEBOOTSTRAP := /usr/sbin/debootstrap

# Debian packages the tests use, installed when missing: $(call apt_install,PACKAGE,what it is for).
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
define apt_install
	@echo "make: installing Debian's $(1) for $(2) (apt-get)"
	@$(SUDO) apt-get update -qq
	@$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) > /dev/null
endef

.PHONY: deps test-deps run test compose-base-images kube-apiserver kube-node proto lint helm-docs helm-lint bench bench-quick bench-ingest bench-pipeline bench-demo bench-connect bench-restart bench-long-range bench-soak bench-security bench-oom bench-changes bench-ui fuzz ui ui-test reader-test

# Two installs into the one virtualenv, each with its stamp, each redone when pyproject.toml changes:
# RUN_ENV is Flamewatch and what running it needs (`make run`, split mode); DEV_ENV adds the test
# tooling of the `dev` extra (pytest, Playwright, schemata and Kubernetes checks: several times the size).
RUN_ENV := $(VENV)/.run-installed
DEV_ENV := $(VENV)/.installed

# What running Flamewatch needs: `make run`, and split mode's processes started by hand.
deps: $(RUN_ENV) $(WORKLOAD) $(UI_BUILD)

# What the tests and benchmarks need on top.
test-deps: deps $(DEV_ENV) $(MINIO) $(PANDAS_SITE)

# The pprof reader is a Rust extension module (libs/pprof/reader) that the install builds with cargo, from
# its committed Cargo.lock; a change to its sources redoes the install, which rebuilds it (a few seconds).
READER := libs/pprof/reader
READER_SOURCES := $(READER)/Cargo.toml $(READER)/Cargo.lock $(wildcard $(READER)/src/*.rs)

$(RUN_ENV): pyproject.toml $(READER_SOURCES)
	@command -v cargo > /dev/null || { echo "make: cargo not found: Flamewatch's pprof reader ($(READER)) is built with \
	Rust 1.63 or later; install Rust (Debian: apt-get install cargo rustc, or rustup from https://rustup.rs) and run make again" >&2; exit 1; }
	@echo "make: installing Flamewatch and the Python packages it runs on into $(VENV)/, building the pprof reader with cargo (the first time takes about a minute)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --disable-pip-version-check --progress-bar on -e .
	@touch $@

# After the run install (order-only: never both pip runs at once under make -j), so only the extra is fetched.
$(DEV_ENV): pyproject.toml | $(RUN_ENV)
	@echo "make: adding the test tooling (the dev extra of pyproject.toml) to $(VENV)/ (the first time takes about two minutes)"
	@$(PY) -m pip install --disable-pip-version-check --progress-bar on -e '.[dev]'
	@touch $@

# pandas for the test that reads a block with it (tests/integration/test_reading_blocks.py), kept out of the
# virtualenv: with pandas importable, pyarrow imports it (and pyarrow.compute) at its first array, in every
# process, which would load ~50 MB into Flamewatch's own processes in the tests and benchmarks. The test runs
# pandas in a process of its own with this directory on its path; numpy and python-dateutil come from the venv.
$(PANDAS_SITE): | $(DEV_ENV)
	@echo "make: installing pandas $(PANDAS_VERSION) into $(PANDAS_SITE)/, apart from the virtualenv, for one test"
	@$(PY) -m pip install --disable-pip-version-check -q --no-deps --target $@.tmp pandas==$(PANDAS_VERSION)
	@mv $@.tmp $@

# The S3 server the tests run against, built from source with the Go toolchain and cached.
$(MINIO):
	@echo "make: building MinIO $(MINIO_VERSION) from source into $(MINIO), for the tests (the first time takes about 4 minutes)"
	@mkdir -p $(CACHE)/bin
	@GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath go install github.com/minio/minio@$(MINIO_VERSION)

# Helm, for the chart's tests (render, lint), built from source with the Go toolchain and cached.
$(HELM):
	@echo "make: building helm $(HELM_VERSION) from source into $(HELM), for the chart's tests (the first time takes a few minutes)"
	@mkdir -p $(CACHE)/bin
	@GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# docker compose v2, for the tests of docker-compose.yml, built from source and cached. `go install` refuses
# its module (its go.mod has exclude directives), so it is built inside the downloaded module.
$(COMPOSE):
	@echo "make: building docker compose $(COMPOSE_VERSION) from source into $(COMPOSE), for the Docker tests (the first time takes about 5 minutes)"
	@mkdir -p $(CACHE)/bin
	@dir=$$(go mod download -json github.com/docker/compose/v2@$(COMPOSE_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p') && \
		cd "$$dir" && GOFLAGS=-trimpath go build -o $(CURDIR)/$(COMPOSE) \
		-ldflags "-X github.com/docker/compose/v2/internal.Version=$(COMPOSE_VERSION)" ./cmd

# The Kubernetes API server the discovery and chart tests run against, built from the k8s.io/kubernetes
# module's source: the module's go.mod points its k8s.io/* staging modules at ./staging, which a module
# download does not carry, so a writable copy has them replaced by their published v0.X.Y versions. The
# version is stamped in as Kubernetes' own build does, so clients (helm's kubeVersion check) see v1.X.Y.
kube-apiserver: $(KUBE_APISERVER)

# The node of the cluster tests: kubelet, kube-scheduler, kube-controller-manager and kube-proxy from the same
# source as kube-apiserver (and kubectl, for the README's Helm commands), CoreDNS from its Go module, Debian's
# containerd, runc and CNI plugins, and docker buildx for the README's `docker build`.
kube-node: $(KUBE_NODE) $(COREDNS) $(CNI_PLUGINS) $(DOCKER_BUILDX)

$(KUBE_SRC)/.copied:
	@mkdir -p $(CACHE)/src
	@set -e; src=$(CURDIR)/$(KUBE_SRC); \
	dir=$$(cd /tmp && GOWORK=off GOFLAGS= go mod download -json k8s.io/kubernetes@$(KUBERNETES_VERSION) \
		| $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'); \
	rm -rf $$src; cp -r $$dir $$src; chmod -R u+w $$src; \
	staging=$$(echo $(KUBERNETES_VERSION) | sed 's/^v1\./v0./'); \
	sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+\$$#\1\2 => \2 $$staging#" $$src/go.mod
	@touch $@

$(KUBE_APISERVER) $(KUBE_NODE): $(KUBE_SRC)/.copied
	@echo "make: building $(notdir $@) $(KUBERNETES_VERSION) from source into $@, for the Kubernetes tests (the first one takes about 10 minutes; the others reuse the Go build cache: 15 s to 2 minutes each)"
	@mkdir -p $(CACHE)/bin
	@set -e; version=$(KUBERNETES_VERSION); minor=$$(echo $$version | cut -d. -f2); \
	ldflags="-X k8s.io/component-base/version.gitVersion=$$version -X k8s.io/component-base/version.gitMajor=1 \
		-X k8s.io/component-base/version.gitMinor=$$minor -X k8s.io/client-go/pkg/version.gitVersion=$$version \
		-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$$minor"; \
	cd $(KUBE_SRC) && GOWORK=off GOFLAGS=-mod=mod nice go build -trimpath -ldflags "$$ldflags" \
		-o $(CURDIR)/$@.tmp ./cmd/$(notdir $@)
	@mv $@.tmp $@

# CoreDNS, which gives the cluster tests' Services their names, built from its Go module.
$(COREDNS):
	@echo "make: building CoreDNS $(COREDNS_VERSION) from source into $(COREDNS), for the cluster tests (the first time takes a few minutes)"
	@mkdir -p $(CACHE)/bin
	@GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath nice go install github.com/coredns/coredns@$(COREDNS_VERSION)

# docker buildx, the Docker CLI's BuildKit plugin (the CLI here comes without it), for the README's `docker
# build` in the cluster tests (DOCKER_CONFIG=$(CACHE)/docker-config): BuildKit shares the layer cache of docker
# compose's builds, where the CLI's legacy builder would build the whole image again.
$(DOCKER_BUILDX):
	@echo "make: building docker buildx $(BUILDX_VERSION) from source into $(CACHE)/bin, for the cluster tests (the first time takes about 4 minutes)"
	@mkdir -p $(CACHE)/bin $(dir $@)
	@GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath nice go install github.com/docker/buildx/cmd/buildx@$(BUILDX_VERSION)
	@ln -sf ../../bin/buildx $@

# Debian's container runtime and CNI plugins (bridge, host-local, loopback, portmap, firewall) for the node.
$(CNI_PLUGINS):
	$(call apt_install,containerd runc containernetworking-plugins nftables,the cluster tests)

# Prometheus Alertmanager, which the alerting tests send incidents to, built from its Go module's source. Its
# web UI is embedded from ui/app/dist, which is built by npm and not part of the module, so a writable copy
# gets a placeholder page there (the tests use its API only); the version is stamped as its own build does.
$(ALERTMANAGER):
	@echo "make: building Alertmanager $(ALERTMANAGER_VERSION) from source into $(ALERTMANAGER), for the alerting tests (the first time takes about 5 minutes)"
	@mkdir -p $(CACHE)/bin $(CACHE)/src
	@set -e; src=$(CURDIR)/$(CACHE)/src/alertmanager-$(ALERTMANAGER_VERSION); \
	if [ ! -f $$src/.copied ]; then \
		dir=$$(cd /tmp && GOWORK=off GOFLAGS= go mod download -json github.com/prometheus/alertmanager@$(ALERTMANAGER_VERSION) \
			| $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["Dir"])'); \
		rm -rf $$src; cp -r $$dir $$src; chmod -R u+w $$src; \
		for ui in elm mantine; do mkdir -p $$src/ui/app/dist/$$ui; \
			echo "<p>This Alertmanager was built without its web UI; its API is at /api/v2.</p>" > $$src/ui/app/dist/$$ui/index.html; done; \
		touch $$src/.copied; \
	fi; \
	cd $$src && GOWORK=off GOFLAGS=-mod=mod nice go build -trimpath \
		-ldflags "-X github.com/prometheus/common/version.Version=$(ALERTMANAGER_VERSION:v%=%)" \
		-o $(CURDIR)/$(ALERTMANAGER).tmp ./cmd/alertmanager
	@mv $(ALERTMANAGER).tmp $(ALERTMANAGER)

# Prometheus, which a test has scrape the function shares recording rules serve and alert on them, built
# from its Go module (without the builtinassets tag it has no web UI to embed; the tests use its API).
$(PROMETHEUS):
	@echo "make: building Prometheus $(PROMETHEUS_VERSION) from source into $(PROMETHEUS), for the rules tests (the first time takes about 15 minutes)"
	@mkdir -p $(CACHE)/bin
	@GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath nice go install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

# Debian's etcd, the store kube-apiserver needs in the Kubernetes tests.
$(ETCD):
	$(call apt_install,etcd-server,the Kubernetes tests)

# The chart's README: its values table from the comments of values.yaml (a test fails when it drifts).
helm-docs: $(VENV)/.installed
	$(PY) deploy/helm/readme.py

helm-lint: $(HELM)
	$(HELM) lint --strict $(CHART)

# The demo Go program `make run` profiles next to Flamewatch itself.
$(WORKLOAD): tests/targets/workload/go.mod $(wildcard tests/targets/workload/*.go)
	@echo "make: building the demo Go program into $(WORKLOAD)"
	@mkdir -p $(CACHE)/targets
	@cd tests/targets/workload && go build -o $(CURDIR)/$(WORKLOAD) .

# Flamewatch on its embedded defaults (data under ./data) with the demo program on :6060; Ctrl-C stops both.
# Flamewatch prints its address once it answers.
run: deps
	@echo "make: starting the demo program on :6060 (log in $(CACHE)/demo.log) and Flamewatch on :8080"
	@$(WORKLOAD) -addr 127.0.0.1:6060 > $(CACHE)/demo.log 2>&1 & \
	demo=$$!; trap 'kill $$demo 2>/dev/null' EXIT INT TERM; \
	$(VENV)/bin/flamewatch all --config.file examples/flamewatch.yaml

test: test-deps $(HELM) $(KUBE_APISERVER) $(KUBE_NODE) $(COREDNS) $(CNI_PLUGINS) $(DOCKER_BUILDX) $(ALERTMANAGER) $(PROMETHEUS) $(ETCD) $(UI_BUILD) $(CHROMIUM) $(DEBUGINFOD) $(GPERFTOOLS) $(DOCKERD) \
		$(DEBOOTSTRAP) $(COMPOSE) ui-test reader-test
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

# The pprof reader's own Rust tests (the tree walk, distinct rows, varints), in its cargo build directory;
# they link libpython, as the extension module built without pyo3's extension-module feature does.
reader-test: $(RUN_ENV)
	@cd $(READER) && cargo test --locked --quiet

# The web UI (TypeScript, React, Vite): npm packages from the committed lock file, built into $(UI)/dist,
# which flamewatch all and flamewatch frontend serve at /. Rebuilt when its sources change.
ui: $(UI_BUILD)

$(UI)/node_modules/.installed: $(UI)/package-lock.json
	@echo "make: installing the UI's npm packages into $(UI)/node_modules (npm ci; the first time takes about 30 s)"
	@cd $(UI) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(UI_BUILD): $(UI)/node_modules/.installed $(UI_SOURCES)
	@echo "make: building the web UI into $(UI)/dist"
	@cd $(UI) && npm run --silent build

ui-test: $(UI)/node_modules/.installed
	@cd $(UI) && npx --no-install vitest run

# Debian's chromium, which the browser tests drive through Playwright (no browser download).
$(CHROMIUM):
	$(call apt_install,chromium,the browser tests; takes a minute or two)

# Debian's debuginfod and gperftools' CPU profiler, for the symbolizer tests (a real debuginfod server, and
# a real profiler of C programs whose profiles arrive as bare addresses).
$(DEBUGINFOD):
	$(call apt_install,debuginfod,the symbolizer tests)

$(GPERFTOOLS):
	$(call apt_install,libgoogle-perftools-dev,the symbolizer tests)

# For a Docker engine that reaches no image registry: local stand-ins for docker-compose.yml's base images
# (the ones the Docker tests build: Debian from debootstrap, the host's Node.js and Go, MinIO from source),
# their tags written into .env, which docker compose reads. Needs a running Docker engine.
compose-base-images: $(DEBOOTSTRAP) $(MINIO)
	@$(PYTHON) deploy/compose/base_images.py --env-file .env

# Debian's Docker engine (dockerd; the docker client on PATH may be newer) and debootstrap, for the Docker
# tests: no image registry is reachable, so they build their base images from a debootstrapped Debian.
$(DOCKERD):
	$(call apt_install,docker.io,the Docker tests)

$(DEBOOTSTRAP):
	$(call apt_install,debootstrap,the Docker tests)

proto: $(VENV)/.installed
	$(PY) proto/generate.py

lint: $(VENV)/.installed
	$(PY) -m ruff check libs services tests bench fuzz proto/generate.py deploy/helm deploy/compose setup.py

# The storage benchmark of issue 8 (bench/README.md): real Go profiles as a fleet and a week through the
# ingester into Postgres and MinIO, compaction, queries; prints the table and writes bench/results/.
# Then issue 21's ingest cost against Pyroscope (bench-ingest, below).
# Runs niced (the machine is shared); about 40 minutes, bench-quick about 3.
bench: test-deps
	nice $(PY) bench/storage.py
	@$(MAKE) --no-print-directory bench-ingest

# Issue 21's goals against Grafana Pyroscope's figures (bench/ingest_cost.py): server CPU and peak memory
# per profile of a fresh `flamewatch all` at its defaults, 16 clients pushing one pprof per POST /ingest,
# small real Go CPU profiles and 300 KB ones, 5 runs each, and what moved between runs (about 20 minutes).
# Niced: its figures are CPU seconds and memory, which nice hardly changes; the load average is written
# beside them. A quick look: make bench-ingest INGEST_COST_FLAGS="--small 300 --large 100 --runs 2"
INGEST_COST_FLAGS ?=
bench-ingest: test-deps
	nice $(PY) bench/ingest_cost.py $(INGEST_COST_FLAGS)

bench-quick: test-deps
	nice $(PY) bench/storage.py --quick

# The earlier figures: pprof decode, ingest and merge of synthetic profiles, the collector's own cost.
bench-pipeline: test-deps
	$(PY) bench/run.py
	$(PY) bench/collector.py

# What Pyroscope's Connect protocol adds to a flamegraph query over /api/v1/query (about 2 minutes each).
bench-connect: test-deps
	nice $(PY) bench/connect_latency.py
	nice $(PY) bench/connect_latency.py --synthetic --sources 8

# How long `flamewatch all` takes to be ready after a kill -9, on a data directory holding real Go profiles
# (bench/restart.py; about 3 minutes). Not niced: it measures a latency, which nice would lengthen.
bench-restart: test-deps
	$(PY) bench/restart.py

# Issue 22's long ranges (bench/long_range.py): a month of one service's 10 s CPU profiles and a week of a
# 100-series fleet, real Go profiles compacted with and without pre-merged trees, generated once into
# .cache/long-range/ (15-20 minutes on 2 shared cores; reruns reuse it); the month's flamegraph warm and
# cold, the fleet's, the month's totals, what trees add to the blocks and a merge split over 2 querier
# replicas, each figure beside the raw profiles' (about 10 minutes more). Niced (the machine is shared): the
# server's CPU per query and the load average are written beside the times.
# LONG_RANGE_ARGS: e.g. `--phases s3 --runs 3` (`.venv/bin/python bench/long_range.py --help`)
bench-long-range: test-deps
	nice $(PY) bench/long_range.py $(LONG_RANGE_ARGS)

# The web UI's figures of issue 23 (bench/ui.py), in Debian's headless chromium through Playwright: the built
# UI's size raw and gzipped, the time from opening the page to a drawn 1-hour CPU flamegraph (median of 5
# fresh browsers) and the main thread's work per frame while the pointer moves over a 20,000-node
# flamegraph. Starts what `make run` starts on free ports (the demo program, `flamewatch all`), waits for
# 3 scrapes of the demo, measures and stops both; writes bench/results/<stamp>-ui.md and .json (about
# 1.5 minutes). Not niced: it measures latencies, which nice would lengthen; the load average is written beside
# them. Against a Flamewatch already running: make bench-ui UI_BENCH_FLAGS="--url http://localhost:8080"
UI_BENCH_FLAGS ?=
bench-ui: deps $(DEV_ENV) $(CHROMIUM)
	$(PY) bench/ui.py $(UI_BENCH_FLAGS)

# What credentials and TLS cost the server in CPU per push, against plain HTTP and plain gRPC, with
# connections kept alive and with a new connection per push, fresh servers every round, and what a new
# connection costs alone (bench/security_cost.py; about 45 minutes on 2 cores).
# Not niced: it measures CPU seconds, which nice hardly changes; the load average is written beside them.
bench-security: test-deps
	$(PY) bench/security_cost.py --profile 10

# How old the last heap profile is when the kernel OOM-kills a leaking program, at heap scrape intervals of
# 15, 10 and 5 s and with the fast heap pace (10 s, 5 s while the heap grows), and what scraping costs
# (bench/oom.py; needs root for the memory cgroup; about 15 minutes). Runs niced (the machine is shared).
bench-oom: test-deps
	nice $(PY) bench/oom.py

# Memory of `flamewatch all` over SOAK_MINUTES of pushes and queries (bench/soak.py): does it level off
# under its caches? Runs niced (the machine is shared).
SOAK_MINUTES ?= 30
bench-soak: test-deps
	nice $(PY) bench/soak.py --minutes $(SOAK_MINUTES)

# False alarms and sensitivity of "what changed" (issue 20, bench/changes.py): real CPU profiles of
# tests/targets/regress (the base build and builds with main.hash 1-20 % slower), captured once into
# .cache/bench/changes/ (about 40 minutes on 2 shared cores; reruns reuse them), compared many times.
bench-changes: test-deps
	nice $(PY) bench/changes.py

# Coverage-guided fuzzing (not part of `test`): each target of fuzz/ for FUZZ_SECONDS, seeded from the
# test corpora; prints executions and findings per target. `make fuzz FUZZ_SECONDS=60 FUZZ_TARGETS=time`
fuzz: $(VENV)/.fuzz-installed
	$(PY) fuzz/seeds.py $(CACHE)/fuzz/seeds
	nice $(PY) fuzz/campaign.py --seconds $(FUZZ_SECONDS) --work $(CACHE)/fuzz $(FUZZ_TARGETS)

$(VENV)/.fuzz-installed: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,fuzz]'
	touch $@

# What `make run` costs Flamewatch itself: its CPU and memory, the embedded Postgres's and the demo's,
# over DEMO_MINUTES (see bench/demo_cost.py for the variants that attribute the cost).
DEMO_MINUTES ?= 10
bench-demo: deps
	$(PY) bench/demo_cost.py --minutes $(DEMO_MINUTES)
