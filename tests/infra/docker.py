"""A real Docker engine for the deployment tests: Debian's `dockerd`, base images built here, compose.

No image registry is reachable from this machine, so the images `docker-compose.yml` names by variable
(`FLAMEWATCH_PYTHON_IMAGE`, `FLAMEWATCH_POSTGRES_IMAGE`, ...) are built locally from a Debian bookworm
root filesystem made by `debootstrap` and turned into an image with `docker import`, plus the small
Dockerfiles under `tests/deploy/images/`. Each is tagged with a digest of its inputs and built only when
that tag is missing, so a warm run (dockerd's image store persists) builds nothing.

- `Engine`: the `dockerd` answering on the default socket; started (and later stopped) when none answers.
- `base_images()`: the compose variables naming the locally built base images.
- `checkout_images()`: the Flamewatch and demo images of this checkout, built by `docker compose build`.
- `Compose`: `docker compose` (v2, built by `make` into `.cache/bin/docker-compose`) on one project;
  `Compose.started()` brings services up until healthy and takes them down after.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import CACHE_DIR, REPO_ROOT

DOCKER = shutil.which("docker") or "/usr/bin/docker"
DOCKERD = "/usr/sbin/dockerd"
COMPOSE = CACHE_DIR / "bin" / "docker-compose"
STATE_DIR = CACHE_DIR / "docker"
IMAGES_DIR = REPO_ROOT / "tests" / "deploy" / "images"
TARGETS_DIR = REPO_ROOT / "tests" / "targets"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
HOST_NODE = Path("/usr/bin/node")
HOST_NPM = Path("/usr/lib/node_modules/npm")
HOST_GO = Path("/usr/local/go")
MINIO_BINARY = CACHE_DIR / "bin" / "minio"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
TAG_PREFIX = "flamewatch-test"
START_TIMEOUT_S = 60.0
BUILD_TIMEOUT_S = 1800.0


class DockerError(RuntimeError):
    """A docker, dockerd or compose command failed; the message holds what it printed."""


def docker(*args: str, stdin: bytes | None = None, timeout: float = 300.0) -> str:
    """docker's standard output; DockerError with its standard error when it fails."""
    done = subprocess.run([DOCKER, *args], input=stdin, capture_output=True, timeout=timeout,
                          env={**os.environ, "DOCKER_BUILDKIT": "0"})
    if done.returncode != 0:
        raise DockerError(f"docker {' '.join(args[:3])}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode(errors="replace")


def image_exists(tag: str) -> bool:
    return subprocess.run([DOCKER, "image", "inspect", tag], capture_output=True).returncode == 0


def container_logs(name: str) -> str:
    """What a container wrote to its standard output and error."""
    done = subprocess.run([DOCKER, "logs", name], capture_output=True, timeout=60)
    return (done.stdout + done.stderr).decode(errors="replace")


def image_id(tag: str) -> str | None:
    done = subprocess.run([DOCKER, "image", "inspect", "--format", "{{.Id}}", tag], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def forget_superseded(tag: str, previous_id: str | None) -> None:
    """Remove the image `tag` named before a rebuild, so each run does not leave one behind."""
    if previous_id and previous_id != image_id(tag):
        subprocess.run([DOCKER, "image", "rm", previous_id], capture_output=True)


def trim_build_cache(keep: str = "4GB") -> None:
    """Bound the build cache (each source change adds the wheel and virtualenv layers), newest kept."""
    docker("builder", "prune", "--force", "--keep-storage", keep)


def image_size(tag: str) -> int:
    """Bytes of the image with all its layers, as `docker image inspect` reports them."""
    return int(json.loads(docker("image", "inspect", tag))[0]["Size"])


# ------------------------------------------------------------------------------------------ engine


class Engine:
    """The Docker engine on the default socket: reused when one answers, else started as root."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self.log = STATE_DIR / "dockerd.log"

    @staticmethod
    def answers() -> bool:
        done = subprocess.run([DOCKER, "version", "--format", "{{.Server.Version}}"], capture_output=True,
                              timeout=30)
        return done.returncode == 0

    def start(self) -> Engine:
        if self.answers():
            return self
        if os.geteuid() != 0:
            raise DockerError("no Docker engine answers and dockerd needs root to start one")
        if not Path(DOCKERD).exists():
            raise DockerError(f"{DOCKERD} is missing: `make test` installs Debian's docker.io")
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self._process = subprocess.Popen([DOCKERD, "--pidfile", str(STATE_DIR / "dockerd.pid")],
                                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.answers():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise DockerError(f"dockerd did not start; its log:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.5)
        return self

    def stop(self) -> None:
        """Stop dockerd if this object started it (an engine that was already running is left alone)."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        self._process = None


# ------------------------------------------------------------------------------------------ base images


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _tree_digest(root: Path) -> str:
    """Names, sizes and modification times of every file under `root` (reading 270 MB of Go is slower)."""
    entries = sorted(f"{p.relative_to(root)}:{p.lstat().st_size}:{p.lstat().st_mtime_ns}" for p in root.rglob("*"))
    return _digest(*entries)


def _input_digest(path: Path) -> str:
    return _tree_digest(path) if path.is_dir() else _file_digest(path)


def apt_mirror(sources: Iterable[Path] = (Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")),
               ) -> str:
    """The Debian mirror this machine's apt uses (one-line or deb822 sources), else deb.debian.org."""
    for source in sources:
        text = source.read_text(errors="replace") if source.is_file() else ""
        for match in re.finditer(r"^(?:deb\s+(?:\[[^\]]*\]\s+)?|URIs:\s*)(\S+)", text, re.MULTILINE):
            uri = match.group(1)
            if uri.rstrip("/").endswith("/debian"):
                return uri
    return DEFAULT_MIRROR


def debian_image() -> str:
    """A Debian bookworm (minbase) image from debootstrap, imported once and kept in dockerd's store."""
    mirror = apt_mirror()
    tag = f"{TAG_PREFIX}/debian:{_digest(SUITE, 'minbase', mirror)}"
    if image_exists(tag):
        return tag
    rootfs = STATE_DIR / "rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["debootstrap", "--variant=minbase", SUITE, str(rootfs), mirror], capture_output=True,
                          text=True, timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        raise DockerError(f"debootstrap {SUITE} from {mirror} failed: {(done.stderr or done.stdout)[-3000:]}")
    try:
        # `with` closes this process's end of the pipe and waits for tar: an open pipe left to the garbage
        # collector is a ResourceWarning, which the test run turns into an error (only on a first run, when
        # the image is built)
        with subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE) as tar:
            imported = subprocess.run([DOCKER, "import", "-", tag], stdin=tar.stdout, capture_output=True,
                                      timeout=BUILD_TIMEOUT_S)
        if imported.returncode != 0:
            raise DockerError(f"docker import of {rootfs}: {imported.stderr.decode(errors='replace')}")
    finally:
        shutil.rmtree(rootfs, ignore_errors=True)
    return tag


def build_image(name: str, base: str, extra: Mapping[str, Path] | None = None, tag_name: str = "") -> str:
    """`tests/deploy/images/<name>/` built on `base`, with `extra` files or directories added to the
    context under the given names; tagged (`tag_name`, default `name`) with a digest of all of it and built
    only when missing."""
    folder, extra = IMAGES_DIR / name, dict(extra or {})
    own = sorted(p for p in folder.rglob("*") if p.is_file())
    tag = f"{TAG_PREFIX}/{tag_name or name}:" + _digest(
        base, *(f"{p.relative_to(folder)}={_file_digest(p)}" for p in own),
        *(f"{arc}={_input_digest(path)}" for arc, path in sorted(extra.items())))
    if image_exists(tag):
        return tag
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=STATE_DIR) as context:
        with tarfile.open(fileobj=context, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for path in own:
                tar.add(path, arcname=str(path.relative_to(folder)))
            for arc, path in extra.items():
                tar.add(path, arcname=arc)
        context.seek(0)
        done = subprocess.run([DOCKER, "build", "--quiet", "--build-arg", f"BASE={base}", "--tag", tag, "-"],
                              stdin=context, capture_output=True, timeout=BUILD_TIMEOUT_S,
                              env={**os.environ, "DOCKER_BUILDKIT": "0"})
    if done.returncode != 0:
        raise DockerError(f"building {tag}: {done.stderr.decode(errors='replace')[-3000:]}")
    return tag


def base_images() -> dict[str, str]:
    """The compose variables naming locally built stand-ins for the public base images."""
    debian = debian_image()
    ca = {"ca-certificates.crt": HOST_CA_BUNDLE}
    if not MINIO_BINARY.exists():
        raise DockerError(f"{MINIO_BINARY} is missing: `make test-deps` builds it")
    return {
        "FLAMEWATCH_PYTHON_IMAGE": build_image("python", debian, ca),
        "FLAMEWATCH_NODE_IMAGE": build_image("node", debian, {**ca, "node": HOST_NODE, "npm": HOST_NPM}),
        "FLAMEWATCH_GO_IMAGE": build_image("golang", debian, {**ca, "go": HOST_GO}),
        "FLAMEWATCH_POSTGRES_IMAGE": build_image("postgres", debian),
        "FLAMEWATCH_MINIO_IMAGE": build_image("minio", debian, {"minio": MINIO_BINARY}),
    }


def target_image(go_image: str, target: str) -> str:
    """`tests/targets/<target>` as a static program on an empty image (its entrypoint), built in `go_image`."""
    return build_image("gotarget", go_image, {"target": TARGETS_DIR / target}, tag_name=target)


# ------------------------------------------------------------------------------------------ compose


@dataclass
class Compose:
    """`docker compose` on one project of the repository's compose file, with its own variables."""

    project: str
    env: dict[str, str]
    files: Sequence[Path] = (REPO_ROOT / "docker-compose.yml",)

    def run(self, *args: str, timeout: float = 600.0, check: bool = True) -> subprocess.CompletedProcess:
        if not COMPOSE.exists():
            raise DockerError(f"{COMPOSE} is missing: `make test` builds docker compose into it")
        command = [str(COMPOSE), "--project-name", self.project, "--project-directory", str(REPO_ROOT)]
        for file in self.files:
            command += ["--file", str(file)]
        done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **self.env}, cwd=REPO_ROOT)
        if check and done.returncode != 0:
            raise DockerError(f"docker compose {' '.join(args)} failed:\n{done.stderr[-4000:]}{done.stdout[-2000:]}")
        return done

    def containers(self) -> list[dict]:
        """`docker compose ps --all` as JSON objects (Service, State, Health, ...)."""
        out = self.run("ps", "--all", "--format", "json").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def health(self, service: str) -> str:
        for container in self.containers():
            if container["Service"] == service:
                return container.get("Health") or container["State"]
        return "absent"

    def exec(self, service: str, *command: str, timeout: float = 60.0) -> str:
        return self.run("exec", "-T", service, *command, timeout=timeout).stdout

    def logs(self) -> str:
        return self.run("logs", "--no-color", "--tail", "60", check=False).stdout

    def down(self) -> None:
        self.run("down", "--volumes", "--remove-orphans", "--timeout", "10", check=False)

    @contextmanager
    def started(self, services: Sequence[str], timeout_s: int) -> Iterator[Compose]:
        """`up --wait` until every service is healthy (an AssertionError with their logs if not); on leaving,
        their logs go to .cache/docker/<project>.log and the project is taken down with its volumes."""
        try:
            self.run("up", "--detach", "--wait", "--wait-timeout", str(timeout_s), *services, timeout=timeout_s + 60)
            yield self
        except DockerError as exc:
            raise AssertionError(f"{exc}\n{self.logs()}") from exc
        finally:
            STATE_DIR.mkdir(parents=True, exist_ok=True)
            (STATE_DIR / f"{self.project}.log").write_text(self.logs())
            self.down()
            trim_build_cache()


# ------------------------------------------------------------------------------------------ this checkout's images


@dataclass(frozen=True)
class CheckoutImages:
    flamewatch: str
    demo: str
    env: dict[str, str]  # the compose variables naming them and the base images
    build_s: float


def checkout_images(base_images: Mapping[str, str]) -> CheckoutImages:
    """The Flamewatch and demo images of docker-compose.yml built from this checkout (a warm layer cache
    rebuilds only what changed), tagged per checkout so that two checkouts testing on one engine do not
    run each other's build; the images a rebuild replaces are removed."""
    checkout = hashlib.sha256(str(REPO_ROOT).encode()).hexdigest()[:12]
    flamewatch, demo = f"{TAG_PREFIX}/flamewatch:{checkout}", f"{TAG_PREFIX}/demo:{checkout}"
    env = {**base_images, "FLAMEWATCH_IMAGE": flamewatch, "FLAMEWATCH_DEMO_IMAGE": demo}
    previous = {tag: image_id(tag) for tag in (flamewatch, demo)}
    started = time.monotonic()
    Compose(project=f"{TAG_PREFIX}-build-{checkout}", env=env).run("build", "ingester", "demo",
                                                                   timeout=BUILD_TIMEOUT_S)
    for tag, previous_id in previous.items():
        forget_superseded(tag, previous_id)
    return CheckoutImages(flamewatch, demo, env, time.monotonic() - started)
