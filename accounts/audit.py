"""The audit trail: every state-changing request, appended by the server after it answered.

A middleware, so no view can forget it and nothing a client sends can skip it: the entry is
written from what the server resolved (the authenticated user and token, the route, the status),
never from the request body. A failure to write it is logged, never turned into an error answer.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse

from .models import ApiToken, AuditEntry

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

SAFE_METHODS = {"GET", "HEAD", "OPTIONS", "TRACE"}
# Route parameters that name the object acted on, in the order they are looked for.
OBJECT_KEYS = ("sid", "job_id", "record_id", "error_id", "token_id", "id", "pk")

# Requests no one was authenticated for are counted here, by (channel, status), never stored row by
# row: anyone can send them, so a row each would be an unbounded write anyone can make. The totals
# go to the log every ANONYMOUS_LOG_EVERY of them.
anonymous_refusals: Counter[tuple[str, int]] = Counter()
ANONYMOUS_LOG_EVERY = 1000
_counting = threading.Lock()


def count_anonymous(channel: str, status: int) -> None:
    with _counting:
        anonymous_refusals[(channel, status)] += 1
        total = sum(anonymous_refusals.values())
    if total % ANONYMOUS_LOG_EVERY == 0:
        log.warning("%d anonymous state-changing requests so far: %s", total, dict(anonymous_refusals))


class AuditMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method not in SAFE_METHODS:
            try:
                record(request, response.status_code, _created_id(response))
            except Exception:  # the trail must never break the answer already given
                log.exception("audit entry not written for %s %s", request.method, request.path)
        return response


def _actor(request: HttpRequest) -> tuple[User | None, str]:
    """The authenticated user and token prefix, as the server resolved them (never the body)."""
    token = getattr(request, "auth", None)
    if isinstance(token, ApiToken):
        return token.user, token.prefix
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return user, ""
    return None, ""


def _action(request: HttpRequest, url_name: str | None, route: str) -> str:
    # ninja names one URL for all methods of a path, so an API action is its method and route.
    if request.path.startswith("/api/") or not url_name:
        template = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        return f"{request.method} /{template.lstrip('/')}"
    return url_name


def _created_id(response: HttpResponse) -> str:
    if response.status_code != 201 or "json" not in response.get("Content-Type", ""):
        return ""
    try:
        value = json.loads(response.content).get("id", "")
    except (ValueError, AttributeError):
        return ""
    return str(value)


def record(request: HttpRequest, status: int, response_id: str = "") -> None:
    match = request.resolver_match
    kwargs = dict(match.kwargs) if match else {}
    user, prefix = _actor(request)
    if user is None:
        # Only an authenticated actor can change anything, so an anonymous request was refused
        # (or found nothing); it is counted, and there is no one to show a row to.
        count_anonymous("api" if request.path.startswith("/api/") else "dashboard", status)
        return
    route = (match.route if match else "") or request.path
    object_ref = next((f"{key}:{kwargs[key]}" for key in OBJECT_KEYS if key in kwargs), "")
    session_sid = str(kwargs.get("sid", ""))
    if not object_ref and status == 201 and response_id:
        # A create names its object only in the answer (a generated session id, a new record).
        object_ref = f"id:{response_id}"
        if "/sessions" in request.path:
            session_sid = response_id
    write_entry(
        user=user,
        token_prefix=prefix,
        channel="api" if request.path.startswith("/api/") else "dashboard",
        method=request.method or "",
        path=request.path,
        action=_action(request, match.url_name if match else None, route),
        object_ref=str(object_ref),
        session_sid=session_sid,
        status=status,
    )


def write_entry(
    *,
    user: User,
    token_prefix: str,
    channel: str,
    method: str,
    path: str,
    action: str,
    object_ref: str,
    session_sid: str,
    status: int,
) -> None:
    """Append one entry; `status` is HTTP's (an MCP tool call is given the status its REST twin answers)."""
    AuditEntry.objects.create(
        user=user,
        username=getattr(user, "username", ""),
        token_prefix=token_prefix,
        channel=channel,
        method=method[:8],
        path=path[:500],
        action=action[:100],
        object_ref=object_ref[:300],
        session_sid=session_sid[:128],
        status=status,
        outcome="ok" if status < 400 else ("refused" if status < 500 else "error"),
    )
