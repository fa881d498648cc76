"""The HTTP guard in front of every route: Host and Origin allowlists, then the caller's key.

Pure ASGI (Starlette's BaseHTTPMiddleware costs about a millisecond per request). In order:

1. Host: a DNS-rebinding page makes a browser send requests to a loopback server under the
   attacker's host name; only the names this server answers to are let in (loopback names,
   `agents.allowed_hosts`, the address it is bound to). 403 otherwise.
2. Origin: when a browser says where a request comes from, it must be an allowed host (any
   port) or one of `agents.allowed_origins`. 403 otherwise.
3. The key, `Authorization: Bearer <key>` (`memory_bank/agents/keys.py`): a valid key becomes
   the request's caller (`scope["state"]["caller"]`, read by the routes and the MCP tools). A
   key that is given but unknown or revoked is refused (401). Without a key, a request from a
   loopback client is the local owner, unless keys are required there too (a `--api-key`, or
   `agents.require_keys_on_loopback`); from anywhere else it is refused (401).

Paths in OPEN_PATHS (a load balancer's health probe) skip the Host check and the key; the page
at /ui/ and its files (`actors/ui`) hold no data and skip the key (a browser opening a URL cannot
send one), not the Host check. Refusals use the API's error body, or OpenAI's error shape under
/v1 (what chat clients parse).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from urllib.parse import urlsplit

from fastapi.datastructures import Headers

from actors.request_guards import EscapedJSONResponse, error_content
from actors.ui import is_page_path
from memory_bank.agents.keys import LOCAL_OWNER, Caller, KeyRing
from memory_bank.config import AgentsConfig

# Paths answered without the API key or a Host check.
OPEN_PATHS = frozenset({"/healthz"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
ANY = "*"
LEGACY_KEY = Caller(key_id=None, name="api-key", permission="admin")


class AccessPolicy:
    """What one ingress replica lets in (see the module docstring)."""

    def __init__(
        self,
        keyring: KeyRing,
        settings: AgentsConfig,
        bound_host: str | None = None,
        legacy_key_sha256: str | None = None,
    ) -> None:
        self.keyring = keyring
        self.legacy_key_sha256 = legacy_key_sha256
        self.keys_on_loopback = settings.require_keys_on_loopback or legacy_key_sha256 is not None
        hosts = set(LOOPBACK_NAMES) | {_host_name(host) for host in settings.allowed_hosts}
        if bound_host and bound_host not in ("0.0.0.0", "::"):
            hosts.add(_host_name(bound_host))
        elif bound_host:
            hosts.add(ANY)  # every address: the names clients use are not known here
        self.hosts = frozenset(hosts)
        self.origins = frozenset(origin.rstrip("/").lower() for origin in settings.allowed_origins)

    def host_allowed(self, host_header: str) -> bool:
        return ANY in self.hosts or _host_name(host_header) in self.hosts

    def origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/").lower() in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and self.host_allowed(parts.netloc)

    def caller(self, authorization: str, client_host: str | None) -> Caller | None:
        """The request's caller; None when it must be refused (401)."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            if self.legacy_key_sha256 is not None and hmac.compare_digest(
                hashlib.sha256(token.encode("utf-8")).hexdigest(), self.legacy_key_sha256
            ):
                return LEGACY_KEY
            return self.keyring.authenticate(token)
        if authorization.strip():
            return None  # something other than a bearer token
        if not self.keys_on_loopback and _is_loopback(client_host):
            return LOCAL_OWNER
        return None


class AccessGuard:
    """The ASGI middleware applying the replica's `AccessPolicy` (`app.state.access`)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        policy: AccessPolicy | None = (
            getattr(scope["app"].state, "access", None) if "app" in scope else None
        )
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        if policy is None:  # the replica has not finished starting: refuse, never open up
            return await _refuse(scope, receive, send, 503, "Unavailable", "starting up")
        headers = Headers(scope=scope)
        if not policy.host_allowed(headers.get("host", "")):
            detail = f"Host {headers.get('host', '')!r} is not one this server answers to"
            return await _refuse(scope, receive, send, 403, "Forbidden", detail)
        origin = headers.get("origin")
        if origin is not None and not policy.origin_allowed(origin):
            detail = f"Origin {origin!r} is not allowed"
            return await _refuse(scope, receive, send, 403, "Forbidden", detail)
        if is_page_path(scope["path"]):
            return await self.app(scope, receive, send)
        client = scope.get("client")
        caller = policy.caller(headers.get("authorization", ""), client[0] if client else None)
        if caller is None:
            detail = "a valid API key is required: 'Authorization: Bearer <key>'"
            return await _refuse(scope, receive, send, 401, "Unauthorized", detail)
        scope.setdefault("state", {})["caller"] = caller
        return await self.app(scope, receive, send)


async def _refuse(scope, receive, send, status: int, error: str, detail: str) -> None:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    content = error_content(scope["path"], status, error, detail)
    await EscapedJSONResponse(status_code=status, content=content, headers=headers)(
        scope, receive, send
    )


def _host_name(host: str) -> str:
    """The name of a Host header or address, without port or IPv6 brackets, lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.rsplit(":", 1)[0]
    return host


def _is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
