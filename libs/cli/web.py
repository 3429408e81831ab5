"""`flamewatch web hash-password` and `hash-token`, which make the hashes the web configuration file
holds, and the client flags (`--token`, `--basic-auth`, `--tls.*`) of the commands that call a server
(`upload`, `debuginfo upload`)."""

from __future__ import annotations

import argparse
import getpass
import hashlib
import secrets
import sys


def add_parsers(sub) -> None:
    p = sub.add_parser("web", help="make the hashes of the web configuration file (--web.config.file)")
    actions = p.add_subparsers(dest="action", required=True, parser_class=type(p))
    password = actions.add_parser(
        "hash-password", help="print the bcrypt hash of a password, for basic_auth_users",
        description="Read a password (asked for on a terminal, else one line of standard input) and print its "
        "bcrypt hash, the form basic_auth_users takes, as htpasswd -nBC 10 makes it.")
    password.add("--cost", "bcrypt's cost: each step doubles the time of a check (10: about 50 ms)", type=int,
                 default=10)
    password.set_defaults(run=run_hash_password, log_level="warning", command="web hash-password")
    token = actions.add_parser(
        "hash-token", help="make a bearer token and print it with its hash, for bearer_tokens",
        description="Make a random bearer token (or read one from standard input with --stdin) and print the "
        "token, for the client, then its sha256, the form bearer_tokens takes.")
    token.add("--stdin", "hash the token given on standard input instead of making one", action="store_true",
              default=False)
    token.set_defaults(run=run_hash_token, log_level="warning", command="web hash-token")


def run_hash_password(args: argparse.Namespace) -> int:
    import bcrypt

    if not 4 <= args.cost <= 16:
        raise ValueError(f"--cost must be between 4 and 16, got {args.cost}")
    password = getpass.getpass("password: ") if sys.stdin.isatty() else sys.stdin.readline().rstrip("\n")
    if not password:
        raise ValueError("empty password: give one")
    print(bcrypt.hashpw(password.encode(), bcrypt.gensalt(args.cost)).decode())
    return 0


def run_hash_token(args: argparse.Namespace) -> int:
    token = sys.stdin.readline().strip() if args.stdin else secrets.token_urlsafe(32)
    if len(token) < 16:
        raise ValueError("a bearer token needs at least 16 characters: a sha256 of a short one is easy to reverse")
    if not args.stdin:
        print(f"token (give it to the client): {token}")
    print(f"sha256:{hashlib.sha256(token.encode()).hexdigest()}")
    return 0


def client_flags(p) -> None:
    """How a command that calls a server authenticates and checks the server."""
    p.add("--token", "a bearer token to send (Authorization: Bearer)", secret=True, default=None)
    p.add("--basic-auth", "USER:PASSWORD to send as basic auth", dest="basic_auth", secret=True, default=None)
    p.add("--tls.ca-file", "the CA that signed the server's certificate (for https:// or gRPC over TLS)",
          dest="tls_ca_file", default=None)
    p.add("--tls.cert-file", "a client certificate to show (mTLS), with --tls.key-file", dest="tls_cert_file",
          default=None)
    p.add("--tls.key-file", "the client certificate's key", dest="tls_key_file", default=None)
    p.add("--tls.server-name", "the name the server's certificate must have, if not the address's host",
          dest="tls_server_name", default=None)


def use_client_flags(args: argparse.Namespace, tls_by_default: bool = False) -> None:
    """Give this process the identity the client flags describe (`rpc.channels`)."""
    import base64

    from flamewatch.clientconfig import TLSConfig
    from flamewatch.rpc.channels import ClientIdentity, use_identity

    if args.token and args.basic_auth:
        raise ValueError("give --token or --basic-auth, not both")
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        raise ValueError("--tls.cert-file and --tls.key-file go together")
    authorization = None
    if args.token:
        authorization = f"Bearer {args.token}"
    elif args.basic_auth:
        if ":" not in args.basic_auth:
            raise ValueError("--basic-auth takes USER:PASSWORD")
        authorization = "Basic " + base64.b64encode(args.basic_auth.encode()).decode()
    tls = None
    if args.tls_ca_file or args.tls_cert_file or args.tls_server_name or tls_by_default:
        tls = TLSConfig(ca_file=args.tls_ca_file or "", cert_file=args.tls_cert_file or "",
                        key_file=args.tls_key_file or "", server_name=args.tls_server_name or "")
    use_identity(ClientIdentity(authorization, tls))
