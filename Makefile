# Every command of the project lives here. `make run` and `make test` install what is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CACHE := .cache
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
MINIO := $(CACHE)/bin/minio
PYTEST_ARGS ?=

.PHONY: deps test proto proto-check lint bench

deps: $(VENV)/.installed $(MINIO)

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $@

# The S3 server the tests run against, built from source with the Go toolchain and cached.
$(MINIO):
	mkdir -p $(CACHE)/bin
	GOBIN=$(CURDIR)/$(CACHE)/bin GOFLAGS=-trimpath go install github.com/minio/minio@$(MINIO_VERSION)

test: deps
	$(PY) -m pytest $(PYTEST_ARGS)

proto: $(VENV)/.installed
	$(PY) proto/generate.py

lint: $(VENV)/.installed
	$(PY) -m ruff check libs services tests bench proto/generate.py

bench: deps
	$(PY) bench/run.py
