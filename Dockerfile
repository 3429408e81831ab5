# Flamewatch's one image: every service is `flamewatch <service>` (default: `flamewatch all`).
#
#   docker build -t flamewatch .
#   docker run -p 8080:8080 flamewatch            # embedded defaults, data in the container's /var/lib/flamewatch
#
# Three build stages and a runtime: the web UI (npm), the wheels of Flamewatch and its dependencies (pip),
# a virtualenv installed from those wheels only; the runtime copies the virtualenv, so it holds no
# compiler, npm or build cache. The base images are arguments, for mirrors and air-gapped builds.

ARG NODE_IMAGE=node:20-slim
ARG PYTHON_IMAGE=python:3.11-slim

# --- the web UI, from the committed lock file
FROM ${NODE_IMAGE} AS ui
WORKDIR /src/services/frontend/ui
COPY services/frontend/ui/package.json services/frontend/ui/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY services/frontend/ui/ ./
RUN npm run --silent build

# --- wheels: the dependencies first (their layer is rebuilt only when pyproject.toml changes), then
# Flamewatch with the UI build as package data of flamewatch.frontend
FROM ${PYTHON_IMAGE} AS wheels
WORKDIR /src
COPY pyproject.toml ./
RUN python3 -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" \
        > requirements.txt \
    && python3 -m pip wheel --no-cache-dir --disable-pip-version-check --wheel-dir /wheels -r requirements.txt
# The pprof reader is Rust (libs/pprof/reader): Debian's rustc and cargo build it from its Cargo.lock, whose
# crates are pinned to versions that still build with bookworm's rustc 1.63. Only this stage has them. The
# crates the lock names are fetched and checked by fetch_crates.py, as bookworm's cargo would clone the
# whole crates.io index from GitHub to find them.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cargo rustc \
    && rm -rf /var/lib/apt/lists/*
COPY libs/pprof/reader/Cargo.lock libs/pprof/reader/fetch_crates.py /tmp/reader/
RUN mkdir -p /root/.cargo \
    && python3 /tmp/reader/fetch_crates.py /tmp/reader/Cargo.lock /tmp/crates >> /root/.cargo/config.toml
# The reader's dependencies (PyO3 and the rest, most of its build time) in a layer of their own, rebuilt only
# when Cargo.toml or Cargo.lock change: built for an empty lib.rs with what setuptools-rust passes (release,
# --locked, the extension-module feature) into a fixed target directory, then the stub's own build removed (the
# real sources, copied later, may be older than it). PYO3_PYTHON is set for both builds: setuptools-rust sets
# it when unset, and a change reruns PyO3's build script and rebuilds everything after it.
ENV CARGO_TARGET_DIR=/cargo-target PYO3_PYTHON=python3
COPY libs/pprof/reader/Cargo.toml libs/pprof/reader/Cargo.lock libs/pprof/reader/
RUN cd libs/pprof/reader \
    && mkdir src && touch src/lib.rs \
    && cargo build --release --locked --features extension-module \
    && cargo clean --release -p flamewatch-pprof-reader \
    && rm -r src
COPY libs/ libs/
COPY services/ services/
COPY --from=ui /src/services/frontend/ui/dist/ services/frontend/ui/dist/
RUN python3 -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

# --- a virtualenv holding only what the wheels install (no pip: nothing installs at run time), less what
# no service imports: the Kubernetes client's asyncio twin (68 MB), pyarrow's tests and C++ headers
FROM ${PYTHON_IMAGE} AS install
COPY --from=wheels /wheels /wheels
RUN python3 -m venv --without-pip /opt/flamewatch \
    && python3 -m pip --python /opt/flamewatch/bin/python install --no-cache-dir --disable-pip-version-check \
        --no-index --find-links /wheels flamewatch \
    && rm -rf /opt/flamewatch/lib/python3*/site-packages/kubernetes/aio \
        /opt/flamewatch/lib/python3*/site-packages/pyarrow/tests /opt/flamewatch/lib/python3*/site-packages/pyarrow/include \
    && /opt/flamewatch/bin/flamewatch frontend --help > /dev/null

# --- runtime
FROM ${PYTHON_IMAGE}
# The user the Helm chart runs as; its home and the data directory are its own, the rest is read-only.
RUN groupadd --gid 10001 flamewatch \
    && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/flamewatch --shell /usr/sbin/nologin flamewatch \
    && mkdir -p /var/lib/flamewatch \
    && chown 10001:10001 /var/lib/flamewatch
COPY --from=install /opt/flamewatch /opt/flamewatch
ENV PATH=/opt/flamewatch/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    FLAMEWATCH_DATA_DIR=/var/lib/flamewatch
USER 10001:10001
WORKDIR /var/lib/flamewatch
EXPOSE 8080 8081
# Healthy means the service answers /readyz on the port of its FLAMEWATCH_HTTP_ADDRESS (8080 when unset,
# the port of `all` and `frontend`), over https when FLAMEWATCH_WEB_CONFIG_FILE names a web configuration
# with tls_server_config (flamewatch/healthcheck.py); python, not curl, so the image needs nothing more.
HEALTHCHECK --interval=5s --timeout=4s --start-period=60s --retries=5 \
    CMD ["python3", "-m", "flamewatch.healthcheck"]
ENTRYPOINT ["flamewatch"]
CMD ["all", "--http-address", ":8080", "--grpc-address", ":8081"]
