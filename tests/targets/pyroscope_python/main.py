"""A Python program profiled by the Pyroscope SDK (`pyroscope-io`), which pushes to a Flamewatch.

Usage: python main.py SERVER_URL APP_NAME SECONDS [TENANT]. It burns CPU in `flamewatch_sdk_hot_loop`
for SECONDS, then shuts the SDK down, which sends what it has not sent yet, and prints "done".
"""

import sys
import time

import pyroscope


def flamewatch_sdk_hot_loop(until: float) -> int:
    total = 0
    while time.monotonic() < until:
        for i in range(10_000):
            total = (total * 31 + i) % 1_000_003
    return total


def main() -> None:
    server, app, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    tenant = sys.argv[4] if len(sys.argv) > 4 else ""
    pyroscope.configure(application_name=app, server_address=server, tenant_id=tenant, upload_interval=1,
                        tags={"sdk": "python"}, enable_logging=True)
    flamewatch_sdk_hot_loop(time.monotonic() + seconds)
    pyroscope.shutdown()
    print("done", flush=True)


if __name__ == "__main__":
    main()
