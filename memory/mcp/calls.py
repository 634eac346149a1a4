"""One MCP tool call: whose it is, the service it runs, the error it becomes, the audit entry it leaves.

Every tool runs through `run`. The caller is resolved from the bearer token the transport carried
(never from an argument); a refused call becomes a tool error whose text is the REST API's error
body, `{"detail", "code", "field"}`, naming the argument in the tool's spelling (the tools tell the
services how they spell it: `field="turns"`, `arguments.SCOPE_NAMES`); every call, refused or not,
is written to the audit trail on channel "mcp".
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import DatabaseError, close_old_connections
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import ValidationError

from accounts import audit
from accounts.models import ApiToken
from ottoweb.errors import ServiceError, invalid_value

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Caller:
    token: ApiToken
    transport: str  # "http" or "stdio"

    @property
    def user(self) -> Any:
        return self.token.user


@dataclass(frozen=True, slots=True)
class ServiceRefusal:
    """A refused call, as the REST API would answer it: its status, code, detail and argument."""

    status: int
    code: str
    detail: str
    field: str | None = None

    def body(self) -> dict[str, str]:
        """The REST API's error body: {"detail", "code"} and, when an argument is at fault, "field"."""
        return {"detail": self.detail, "code": self.code, **({"field": self.field} if self.field else {})}


class Refused(ToolError):
    """A tool call refused; the server answers it as `refusal.body()` (`refusal_result`)."""

    def __init__(self, refusal: ServiceRefusal) -> None:
        super().__init__(refusal.detail)
        self.refusal = refusal


def unauthorized(detail: str) -> Refused:
    return Refused(ServiceRefusal(401, "unauthorized", detail))


def invalid_arguments(exc: ValidationError) -> ServiceRefusal:
    """The SDK's refusal of a tool's arguments (its argument model's ValidationError) in the REST
    API's words: the first error, its argument named as the tool spells it (`turns[0].meta.a`)."""
    errors = exc.errors(include_url=False)
    first: Mapping[str, Any] = errors[0] if errors else {}
    refused = invalid_value(first, first.get("loc", ()), whole="arguments", unknown="unknown argument")
    return ServiceRefusal(refused.status, refused.code, refused.detail, refused.field)


def refusal_result(refusal: ServiceRefusal) -> CallToolResult:
    """A refused call as the tool's answer: an error result whose text, and structured content,
    is the REST API's error body."""
    body = refusal.body()
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=True,
    )


def _refusal(exc: ServiceError) -> ServiceRefusal:
    return ServiceRefusal(exc.status, exc.code, exc.detail, exc.field)


def run(
    caller: Callable[[], Caller],
    tool: str,
    work: Callable[[Caller], T],
    *,
    session: str = "",
    object_ref: str = "",
) -> T:
    """`work(caller)` as one tool call: a fresh database connection if the old one is stale, refusals
    raised as Refused (answered in the REST API's words), and an audit entry with the status the
    REST API would have answered."""
    close_old_connections()
    who = caller()
    status = 200
    try:
        try:
            return work(who)
        except ServiceError as exc:
            raise Refused(_refusal(exc)) from None
        except DatabaseError as exc:
            log.error("mcp %s: database error: %s", tool, exc)
            raise Refused(
                ServiceRefusal(
                    503, "db_unavailable", "the database cannot be used; nothing was changed, try again later"
                )
            ) from None
    except Refused as refused:
        status = refused.refusal.status
        raise
    except Exception:
        status = 500
        raise  # the SDK answers an error result without the exception's text, and logs it
    finally:
        audit_call(who, tool, status, session=session, object_ref=object_ref)
        close_old_connections()


def audit_call(who: Caller, tool: str, status: int, *, session: str = "", object_ref: str = "") -> None:
    """The audit entry of one tool call; a failure to write it is logged, never the caller's error."""
    try:
        audit.write_entry(
            user=who.user,
            token_prefix=who.token.prefix,
            channel="mcp",
            method="CALL",
            path="/mcp" if who.transport == "http" else "stdio",
            action=f"mcp {tool}",
            object_ref=object_ref or (f"sid:{session}" if session else ""),
            session_sid=session,
            status=status,
        )
    except Exception:  # the trail must never break the answer
        log.exception("audit entry not written for mcp %s", tool)
