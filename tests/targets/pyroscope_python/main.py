"""A Python program profiled by the Pyroscope SDK (`pyroscope-io`), which pushes to a Flamewatch.

Usage: python main.py SERVER_URL APP_NAME SECONDS [TENANT] [--basic-auth USER:PASSWORD] [--header NAME=VALUE].
It burns CPU in `flamewatch_sdk_hot_loop` for SECONDS, then shuts the SDK down, which sends what it has
not sent yet, and prints "done". The credential goes in the SDK's own settings: `basic_auth_username`
and `basic_auth_password`, or `http_headers` (the SDK has no setting of its own for a bearer token).
"""

import argparse
import time

import pyroscope


def flamewatch_sdk_hot_loop(until: float) -> int:
    total = 0
    while time.monotonic() < until:
        for i in range(10_000):
            total = (total * 31 + i) % 1_000_003
    return total


def arguments() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("server")
    p.add_argument("app")
    p.add_argument("seconds", type=float)
    p.add_argument("tenant", nargs="?", default="")
    p.add_argument("--basic-auth", default="", help="USER:PASSWORD")
    p.add_argument("--header", action="append", default=[], help="NAME=VALUE, sent with every push")
    return p.parse_args()


def main() -> None:
    args = arguments()
    user, _, password = args.basic_auth.partition(":")
    headers = dict(h.split("=", 1) for h in args.header)
    pyroscope.configure(application_name=args.app, server_address=args.server, tenant_id=args.tenant,
                        basic_auth_username=user, basic_auth_password=password, http_headers=headers,
                        upload_interval=1, tags={"sdk": "python"}, enable_logging=True)
    flamewatch_sdk_hot_loop(time.monotonic() + args.seconds)
    pyroscope.shutdown()
    print("done", flush=True)


if __name__ == "__main__":
    main()
