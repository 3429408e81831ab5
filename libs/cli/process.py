"""What every server command does around its services: bind the ports, open the storage, serve the
assembled services until SIGINT/SIGTERM, and close everything it opened, last opened first.

    async def main(stack):
        listeners = listen(args, stack, http_address, grpc_address)   # a taken port fails first
        store, db = open_storage(stack, storage_config(args))
        await serve(args, listeners, ingester.assemble(stack, config, store, db), ready=...)
    return run(main)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal

from flamewatch.config import StorageConfig
from flamewatch.rpc.assembly import Assembly

log = logging.getLogger("flamewatch")


def run(main) -> int:
    """Run `main(stack)`; whatever it opened is closed through the stack, last opened first, whether
    it returns or fails part way through starting."""

    async def running() -> None:
        async with contextlib.AsyncExitStack() as stack:
            await main(stack)
        log.info("stopped")

    asyncio.run(running())
    return 0


def listen(args: argparse.Namespace, stack: contextlib.AsyncExitStack, http_address: str,
           grpc_address: str | None):
    """Bind the ports first: a taken port fails before storage or services start. Every gRPC call is
    checked against the web configuration file (`--web.config.file`), as every HTTP request is in `serve`."""
    from flamewatch.rpc.auth import AuthInterceptor
    from flamewatch.rpc.listen import listen as bind

    security = web_security(args)
    listeners = bind(http_address, grpc_address, interceptors=[AuthInterceptor(security.authenticator)],
                     tls=security.server_tls, max_connection_age_s=args.grpc_max_connection_age)
    stack.callback(listeners.close)
    security.warn_if_open(listeners.http_address, listeners.grpc_address)
    return listeners


def web_security(args: argparse.Namespace):
    """The process's web configuration, read once: its authenticator and the identity its clients use."""
    from flamewatch.auth.process import WebSecurity

    if getattr(args, "web_security", None) is None:
        args.web_security = WebSecurity.load(args.web_config_file, in_process=args.command == "all")
    return args.web_security


def open_storage(stack: contextlib.AsyncExitStack, config: StorageConfig):
    from flamewatch.storage.postgres import open_database

    db = open_database(config.postgres)
    stack.callback(db.close)
    store = open_counted_store(config.object_store)
    stack.callback(store.close)
    log.info("object store: %s", config.object_store)
    return store, db


def open_counted_store(config):
    """The object store `config` names, its calls counted in the process's /metrics."""
    from flamewatch.storage.instrumented import InstrumentedStore
    from flamewatch.storage.objstore import backend_name, open_object_store

    return InstrumentedStore(open_object_store(config), backend_name(config))


def config_loader(path: str):
    """Reads the scrape configuration file each time it is called (at start, and on every reload)."""
    from flamewatch.collector.config import ConfigError, load_config

    def load():
        try:
            return load_config(path)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the configuration file: {exc.strerror}") from exc

    return load


async def serve(args: argparse.Namespace, listeners, assembly: Assembly, ready=None,
                ready_message: str | None = None) -> None:
    """Serve the assembly's routers and servicers, plus /debug/pprof (this process), /metrics, /healthz
    and /readyz (`ready`: the checks of what it depends on), until SIGINT/SIGTERM; SIGHUP and
    POST /-/reload reload what the assembly reloads."""
    from flamewatch.rpc.http import build_app
    from flamewatch.rpc.readiness import no_dependencies
    from flamewatch.rpc.reload import reload_router
    from flamewatch.rpc.runtime import serve as run_servers
    from flamewatch.selfprofile.routes import router as profiling_router

    reloads = []
    if assembly.reload is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, _reload_logged, assembly.reload)
        reloads = [reload_router(assembly.reload)]
    routers = [*assembly.routers, *reloads, profiling_router(heap_enabled=args.heap_profiling)]
    _start_heap_tracking(args)  # after start-up: tracing every import would slow it down many times
    app = build_app(routers, ready=ready or no_dependencies(), authenticator=web_security(args).authenticator)
    await run_servers(listeners, app, assembly.register_grpc, assembly.before_stop, ready_message)


def _reload_logged(reload) -> None:
    try:
        reload()
    except ValueError as exc:
        log.error("reload failed, keeping the running configuration: %s", exc)


def _start_heap_tracking(args: argparse.Namespace) -> None:
    from flamewatch.selfprofile.heap import start_heap_tracking

    if getattr(args, "heap_profiling", False):
        start_heap_tracking()


def local(address: str) -> str:
    """An address this process can dial: a wildcard host becomes 127.0.0.1."""
    host, _, port = address.rpartition(":")
    return f"{'127.0.0.1' if host in ('', '0.0.0.0', '::', '[::]') else host}:{port}"


def with_port(address: str, port: int) -> str:
    return f"{address.rpartition(':')[0]}:{port}"


def browsable(address: str) -> str:
    """host:port as a browser on this machine reaches it: a wildcard or loopback host is localhost."""
    host, _, port = address.rpartition(":")
    return f"{'localhost' if host in ('', '0.0.0.0', '::', '[::]', '127.0.0.1') else host}:{port}"


PARENT_POLL_S = 1.0


def watch_parent(stack: contextlib.AsyncExitStack, parent: int | None, what: str) -> None:
    """A child of `flamewatch all` (`--parent-pid`): stop as SIGTERM does once `parent` is gone (no
    SIGTERM comes when it is killed; this process is then some other process's child)."""
    if not parent:
        return

    async def watch() -> None:
        while os.getppid() == parent:
            await asyncio.sleep(PARENT_POLL_S)
        log.warning("%s: the process that started it (%d) is gone; stopping", what, parent)
        os.kill(os.getpid(), signal.SIGTERM)

    task = asyncio.create_task(watch(), name="parent-watch")
    stack.callback(task.cancel)
