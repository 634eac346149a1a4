"""MCP over streamable HTTP at /mcp, in the web process beside Django (ottoweb/asgi.py).

Stateless, JSON answers: every POST carries its bearer token and is authenticated on its own, so a
revoked token stops working on its next call and no session state outlives a request. A request
without a live token is answered 401 with `WWW-Authenticate: Bearer … resource_metadata=…` (RFC 9728,
as the MCP authorization spec asks), before the MCP SDK sees it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts import audit, throttle
from accounts.auth import token_owner
from accounts.models import ApiToken

from .calls import Caller, unauthorized
from .tools import build_server

PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
# Where the gate leaves the authenticated token for the tools (the ASGI scope travels with the request).
TOKEN_KEY = "ottoweb.token"


def _identify(ctx: Context) -> Caller:
    request = ctx.request_context.request
    token = request.scope.get(TOKEN_KEY) if request is not None else None
    if not isinstance(token, ApiToken):  # only reachable past the gate, which always sets it
        raise unauthorized("no bearer token")
    return Caller(token, "http")


def _owner(token: str) -> ApiToken | None:
    # A worker thread of its own: its database connection is opened and closed like a request's.
    close_old_connections()
    try:
        return token_owner(token)
    finally:
        close_old_connections()


def _refusal_wait(scope: Scope) -> int:
    """Count a wrong token against the client's address, as the REST API does (accounts/throttle.py);
    the seconds the address must now wait (0: not locked)."""
    header = settings.OTTO_CLIENT_ADDRESS_HEADER.lower().encode("latin-1")
    forwarded = dict(scope["headers"]).get(header, b"").decode("latin-1") if header else ""
    client = scope.get("client")
    address = throttle.address_of(str(client[0]) if client else "", forwarded)
    close_old_connections()
    try:
        return throttle.refuse_token(throttle.address_token_keys(address))
    finally:
        close_old_connections()


def _host(scope: Scope) -> str:
    return dict(scope["headers"]).get(b"host", b"127.0.0.1").decode("latin-1")


def _base_url(scope: Scope) -> str:
    """This server's own address as the request names it; only called once the Host is allowed
    (`_refusal`), so a forged Host never reaches the challenge or the metadata document."""
    return f"{scope.get('scheme', 'http')}://{_host(scope)}"


def _refusal(scope: Scope) -> tuple[int, dict[str, str]] | None:
    """Why a request is refused before anything else, or None: a Host outside ALLOWED_HOSTS (as
    Django refuses it), a browser Origin other than this server's own or a trusted one (a page on
    another port of the same machine is another origin), and GET on /mcp (stateless JSON answers:
    there is no event stream to open, MCP's spec lets a server say 405)."""
    host = _host(scope)
    if not validate_host(split_domain_port(host)[0], settings.ALLOWED_HOSTS):
        return 400, {"detail": "the Host header names no host this server answers for", "code": "bad_host"}
    origin = dict(scope["headers"]).get(b"origin")
    if origin is not None:
        said = origin.decode("latin-1")
        if said != _base_url(scope) and said not in settings.CSRF_TRUSTED_ORIGINS:
            return 403, {
                "detail": f"requests from the origin {said!r} are not accepted",
                "code": "forbidden_origin",
            }
    if scope["method"] == "GET" and scope["path"].rstrip("/") == PATH:
        return 405, {
            "detail": "MCP here is stateless JSON over POST: no event stream",
            "code": "method_not_allowed",
        }
    return None


def _metadata(scope: Scope) -> dict[str, Any]:
    """The protected-resource document (RFC 9728): ottoweb's own bearer tokens, in the header.

    No authorization server is named: tokens come from `manage.py create_token` or the dashboard's
    Account page, never from an OAuth flow.
    """
    base = _base_url(scope)
    return {
        "resource": base + PATH,
        "resource_name": "ottoweb",
        "bearer_methods_supported": ["header"],
        "resource_documentation": base + "/api/v1/docs",
    }


async def _json(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    raw = json.dumps(body).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start + headers})
    await send({"type": "http.response.body", "body": raw})


class BearerGate:
    """Only requests with a live ottoweb token reach the MCP app; the metadata document is public."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = _refusal(scope)
        if refused is not None:
            status, body = refused
            headers = [(b"allow", b"POST")] if status == 405 else []
            await _json(send, status, body, headers)
            return
        if scope["path"].startswith(METADATA_PATH):
            await _json(send, 200, _metadata(scope), [])
            return
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        row = await anyio.to_thread.run_sync(_owner, token) if token else None
        wait = await anyio.to_thread.run_sync(_refusal_wait, scope) if token and row is None else 0
        if wait:
            refusal = throttle.Throttled(wait)  # the REST API's refusal, word for word
            audit.count_anonymous("mcp", refusal.status)
            await _json(
                send,
                refusal.status,
                {"detail": refusal.detail, "code": refusal.code},
                [(b"retry-after", str(refusal.retry_after).encode())],
            )
            return
        if row is None:
            audit.count_anonymous("mcp", 401)
            challenge = f'Bearer realm="ottoweb", resource_metadata="{_base_url(scope)}{METADATA_PATH}{PATH}"'
            if token:
                challenge += ', error="invalid_token", error_description="unknown or revoked token"'
            detail = "missing or invalid bearer token (Authorization: Bearer <token>)"
            await _json(
                send,
                401,
                {"detail": detail, "code": "unauthorized"},
                [(b"www-authenticate", challenge.encode())],
            )
            return
        await self.app({**scope, TOKEN_KEY: row}, receive, send)


def _transport_security() -> TransportSecuritySettings:
    """DNS-rebinding protection with Django's ALLOWED_HOSTS (any port), off when they allow any host."""
    hosts = list(settings.ALLOWED_HOSTS)
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for host in hosts for h in (host, f"{host}:*")],
        allowed_origins=[
            o for host in hosts for o in (f"http://{host}", f"http://{host}:*", f"https://{host}")
        ],
    )


def mcp_app() -> ASGIApp:
    """The gated MCP app; its lifespan runs the SDK's session manager (ottoweb/asgi.py forwards it)."""
    server = build_server(_identify)
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        transport_security=_transport_security(),
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )
    return BearerGate(app)
