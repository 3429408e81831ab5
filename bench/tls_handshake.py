"""OpenSSL's part of a TLS 1.3 handshake, server side, by the key of the server's certificate: the floor
under what `connection_cost.py` measures for a new HTTPS connection (which adds asyncio's TLS layer,
uvicorn, the sockets and the kernel).

    .venv/bin/python bench/tls_handshake.py [--batches 15] [--size 40]

Client and server are two `ssl.SSLObject`s over memory BIOs in this process (no sockets, no event loop);
the server's CPU (`time.thread_time`) is summed over its `do_handshake` calls and its first write (which
sends the session tickets Python's default context issues: two). A batch is `--size` handshakes; the
kinds take turns batch by batch; printed: the median and minimum over batches, in ms per handshake, for
an EC P-256 and an RSA 2048 certificate, each with 2 (Python's default), 1 and 0 session tickets, and for
a client that resumes its session from a ticket.
"""

from __future__ import annotations

import argparse
import os
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from infra.certs import CertificateAuthority  # noqa: E402

KEYS = {"EC P-256": None, "RSA 2048": 2048}
TICKETS = (2, 1, 0)


def handshake(client: ssl.SSLContext, server: ssl.SSLContext, session: ssl.SSLSession | None = None
              ) -> tuple[float, ssl.SSLSession | None, bool]:
    """One handshake: the server's CPU seconds, the client's session after it, and whether it resumed."""
    to_server, to_client, from_server, from_client = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    near = client.wrap_bio(to_client, from_client, server_hostname="localhost", session=session)
    far = server.wrap_bio(to_server, from_server, server_side=True)
    spent, near_done, far_done = 0.0, False, False
    while not (near_done and far_done):
        if not near_done:
            try:
                near.do_handshake()
                near_done = True
            except ssl.SSLWantReadError:
                pass
        to_server.write(from_client.read())
        began = time.thread_time()
        if not far_done:
            try:
                far.do_handshake()
                far_done = True
            except ssl.SSLWantReadError:
                pass
        spent += time.thread_time() - began
        to_client.write(from_server.read())
    began = time.thread_time()
    far.write(b"x")  # the tickets go out with the server's first data
    spent += time.thread_time() - began
    to_client.write(from_server.read())
    near.read(1)
    return spent, near.session, near.session_reused


def contexts(directory: Path) -> tuple[ssl.SSLContext, dict[tuple[str, int], ssl.SSLContext]]:
    ca = CertificateAuthority.create(directory)
    servers = {}
    for name, bits in KEYS.items():
        issued = ca.issue(f"server-{bits or 'ec'}", rsa_bits=bits)
        for tickets in TICKETS:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(issued.cert, issued.key)
            context.num_tickets = tickets
            servers[(name, tickets)] = context
    return ssl.create_default_context(cafile=str(ca.cert)), servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--size", type=int, default=40, help="handshakes per batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        client, servers = contexts(Path(tmp))
    full: dict[tuple[str, int], list[float]] = {kind: [] for kind in servers}
    resumed: dict[str, list[float]] = {name: [] for name in KEYS}
    for _ in range(args.batches):
        for kind, server in servers.items():
            full[kind].append(1e3 * statistics.mean(handshake(client, server)[0] for _ in range(args.size)))
        for name in KEYS:
            _, session, _ = handshake(client, servers[(name, 1)])
            batch = []
            for _ in range(args.size):
                spent, session, reused = handshake(client, servers[(name, 1)], session)
                if not reused:
                    raise SystemExit(f"{name}: the client did not resume its session")
                batch.append(spent)
            resumed[name].append(1e3 * statistics.mean(batch))
    print(f"{ssl.OPENSSL_VERSION}, load average {os.getloadavg()}; server CPU ms per handshake, median (min) of "
          f"{args.batches} batches of {args.size}:")
    for (name, tickets), values in full.items():
        print(f"  {name}, {tickets} session tickets: {statistics.median(values):.3f} ({min(values):.3f})")
    for name, values in resumed.items():
        print(f"  {name}, resumed from a ticket: {statistics.median(values):.3f} ({min(values):.3f})")


if __name__ == "__main__":
    main()
