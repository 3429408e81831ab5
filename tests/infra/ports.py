"""Free TCP ports on the loopback interface."""

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port that nothing listens on right now.

    Another process may take it before the caller binds it; prefer letting a server bind port 0
    and report its address where the server supports that.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
