"""Who is asking, and for which tenant: resolved once per request from its credential.

`Authenticator.caller` turns an `Authorization` header (Basic or Bearer) or a verified client
certificate's common name into a `Caller`, or raises `Unauthenticated` (HTTP 401, gRPC UNAUTHENTICATED).
`Caller.tenant(action, asked)` gives the tenant a request acts on: the one `X-Scope-OrgID` asks for if
the credential allows it (else `PermissionDenied`: HTTP 403, gRPC PERMISSION_DENIED), or the first
tenant the credential may use when the request asks for none; a header naming several (`a|b`) is a bad
request there (400). `Caller.tenants(asked)` gives the tenants of a read that may name several: all
of them if the credential may read each, else `PermissionDenied` naming those it may not.
`Caller.readable_tenants` lists those it may read, for a tenant picker. Without a web configuration
file every request is `ANYONE`, who may do everything and is `anonymous` unless it names a tenant:
Flamewatch as it was before credentials.

bcrypt is slow on purpose (about 50 ms a check at cost 10), so a password checked once is remembered
by a keyed digest of the user and password (never the password), as Prometheus's exporter-toolkit
does; wrong passwords are remembered too, so repeating one costs nothing, and at most two checks run
at a time, so guessing cannot take every core. Every refusal is counted by reason
(`flamewatch_auth_refusals_total`) and logged at most once per 10 s per reason, without the secret.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import enum
import hashlib
import hmac
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import bcrypt
from prometheus_client import Counter

from flamewatch.auth.errors import PermissionDenied, Unauthenticated
from flamewatch.auth.webconfig import ALL_TENANTS, Access, WebConfig
from flamewatch.ratelimitedlog import RateLimitedLog
from flamewatch.rpc.tenant import DEFAULT_TENANT, SEPARATOR, resolve_tenant, resolve_tenants

log = logging.getLogger(__name__)
_refusal_log = RateLimitedLog(log)

REFUSALS = Counter("flamewatch_auth_refusals", "Requests refused for their credential or its scope, by reason",
                   ["reason"])
_CACHED_CHECKS = 4096
_CONCURRENT_BCRYPT = 2


class Action(enum.Enum):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"  # what belongs to no tenant: shared debug information, maintenance, metrics, profiles of us


class _NeedsBcrypt(Exception):
    """A password not checked before, asked of a caller that must not wait for bcrypt (an event loop)."""


@dataclass(frozen=True)
class Caller:
    name: str
    access: Access
    authenticated: bool = True

    def tenant(self, action: Action, asked: str | None) -> str:
        """The tenant this request acts on; `asked` is its X-Scope-OrgID (None or empty: none)."""
        allowed = self.access.write if action is Action.WRITE else self.access.read
        if asked and SEPARATOR in asked:
            raise ValueError(f'X-Scope-OrgID "{asked}" names several tenants: {_ONE_TENANT[action]}')
        if asked:
            tenant = resolve_tenant(asked)
            if ALL_TENANTS in allowed or tenant in allowed:
                return tenant
            choose = " (X-Scope-OrgID chooses among them)" if len(allowed) > 1 or ALL_TENANTS in allowed else ""
            refuse("tenant_denied", f"{self.name} may not {action.value} tenant {tenant!r}; it may "
                                    f"{action.value} {_listing(allowed)}{choose}")
        for tenant in allowed:
            if tenant != ALL_TENANTS:
                return tenant
        if allowed:
            return DEFAULT_TENANT
        refuse("tenant_denied", f"{self.name} may not {action.value} any tenant")

    def tenants(self, asked: str | None) -> tuple[str, ...]:
        """The tenants a read acts on, sorted: each that `asked` (its X-Scope-OrgID) names, `a|b` naming
        two, if this caller may read every one of them (else `PermissionDenied` naming those it may not);
        one tenant as `tenant` gives it when `asked` names one or none."""
        named = resolve_tenants(asked)
        if len(named) < 2:
            return (self.tenant(Action.READ, named[0] if named else None),)
        allowed = self.access.read
        denied = [t for t in named if ALL_TENANTS not in allowed and t not in allowed]
        if denied:
            refuse("tenant_denied", f"{self.name} may not read tenant{'s' if len(denied) > 1 else ''} "
                                    f"{', '.join(repr(t) for t in denied)}; it may read {_listing(allowed)}")
        return named

    def readable_tenants(self, stored: Iterable[str]) -> list[str]:
        """The tenants this caller may read, its default first (the one a request naming none acts on):
        those its credential lists and, if it may read every tenant, each of `stored` (those with data).
        A caller who may read none is refused, as by `tenant`."""
        default = self.tenant(Action.READ, None)
        listed = [t for t in self.access.read if t != ALL_TENANTS]
        if ALL_TENANTS in self.access.read:
            listed += sorted(stored)
        return list(dict.fromkeys([default, *listed]))

    def require_admin(self, what: str) -> None:
        if not self.access.admin:
            refuse("admin_denied", f"{self.name} may not {what}: it needs admin in the web configuration's access")


ANYONE = Caller(DEFAULT_TENANT, Access.everything(), authenticated=False)
# Why a request whose X-Scope-OrgID names several tenants is refused where one tenant is needed
_ONE_TENANT = {Action.WRITE: "a write names one tenant",
               Action.READ: "this API reads one tenant at a time (queries, labels and series read several)"}


def refuse(reason: str, message: str, unauthenticated: bool = False):
    REFUSALS.labels(reason).inc()
    _refusal_log.log(logging.WARNING, reason, "refused: %s", message)
    raise (Unauthenticated if unauthenticated else PermissionDenied)(message)


def _listing(tenants: tuple[str, ...]) -> str:
    if not tenants:
        return "no tenant"
    return "every tenant" if ALL_TENANTS in tenants else ", ".join(repr(t) for t in tenants)


class Authenticator:
    """Checks credentials against one web configuration; safe to use from any thread."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self._key = os.urandom(32)  # keys the remembered checks, so the cache holds no usable digest
        self._checked: OrderedDict[bytes, bool] = OrderedDict()
        self._lock = threading.Lock()
        self._bcrypt = threading.BoundedSemaphore(_CONCURRENT_BCRYPT)

    @property
    def enabled(self) -> bool:
        return self.config.authenticates

    async def caller_async(self, authorization: str | None, certificate_name: str | None = None) -> Caller:
        """`caller` for an event loop: a password not checked before is checked on a worker thread."""
        try:
            return self.caller(authorization, certificate_name, _wait=False)
        except _NeedsBcrypt:
            return await asyncio.to_thread(self.caller, authorization, certificate_name)

    def caller(self, authorization: str | None, certificate_name: str | None = None, _wait: bool = True) -> Caller:
        """The caller of a request with this Authorization header and, if it showed one that the client
        CA verified, this client certificate's common name."""
        if not self.enabled:
            return ANYONE
        if authorization:
            scheme, _, credential = authorization.strip().partition(" ")
            scheme = scheme.lower()
            if scheme == "basic":
                return self._basic(credential.strip(), _wait)
            if scheme == "bearer":
                return self._bearer(credential.strip())
            refuse("unknown_scheme", f"unsupported Authorization scheme {scheme[:20]!r}: use Basic or Bearer", True)
        if certificate_name is not None and self.config.access is not None:
            access = self.config.access.get(certificate_name)
            if access is not None:
                return Caller(certificate_name, access)
            refuse("unknown_certificate", f"client certificate {certificate_name[:64]!r} is not in the web "
                                          "configuration's access", True)
        refuse("no_credentials", "credentials required: send basic auth or a bearer token "
                                 "(Authorization header)", True)

    def _basic(self, credential: str, wait: bool) -> Caller:
        try:
            user, sep, password = base64.b64decode(credential, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            user, sep, password = "", "", ""
        if not sep:
            refuse("bad_credentials", "malformed basic auth: expected base64 of user:password", True)
        hashed = self.config.users.get(user)
        access = self.config.access_of(user)
        if hashed is None or access is None or not self._password_matches(user, password, hashed, wait):
            refuse("bad_credentials", f"wrong user or password (user {user[:64]!r})", True)
        return Caller(user, access)

    def _bearer(self, token: str) -> Caller:
        name = self.config.tokens.get(hashlib.sha256(token.encode()).digest())
        access = self.config.access_of(name) if name is not None else None
        if name is None or access is None:
            refuse("bad_credentials", "unknown bearer token", True)
        return Caller(name, access)

    def _password_matches(self, user: str, password: str, hashed: bytes, wait: bool) -> bool:
        key = hmac.digest(self._key, user.encode() + b"\0" + password.encode() + b"\0" + hashed, "sha256")
        with self._lock:
            known = self._checked.get(key)
            if known is not None:
                self._checked.move_to_end(key)
                return known
        if not wait:
            raise _NeedsBcrypt
        with self._bcrypt:
            matches = bcrypt.checkpw(password.encode(), hashed)
        with self._lock:
            self._checked[key] = matches
            while len(self._checked) > _CACHED_CHECKS:
                self._checked.popitem(last=False)
        return matches
