"""One MCP tool call: whose it is, the service it runs, the error it becomes, the audit entry it leaves.

Every tool runs through `run`. The caller is resolved from the bearer token the transport carried
(never from an argument); a refused call becomes a tool error naming the argument, as the REST API
names the field; every call, refused or not, is written to the audit trail on channel "mcp".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.db import DatabaseError, close_old_connections
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, ValidationError

from memory.models import ApiToken
from ottoweb import audit
from ottoweb.errors import ServiceError

log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# The REST contract's field names, as the tools spell the same arguments.
ARGUMENT_NAMES = {
    "items": "turns",
    "appName": "app_name",
    "conversationId": "conversation_id",
    "id": "session",
}
_FIELD = re.compile(r"\b(items|appName|conversationId)\b")


@dataclass(frozen=True, slots=True)
class Caller:
    token: ApiToken
    transport: str  # "http" or "stdio"

    @property
    def user(self) -> Any:
        return self.token.user


def argument_name(field: str) -> str:
    """A REST field path ("items[2].text", "appName") as the tool's argument ("turns[2].text", "app_name")."""
    if field in ARGUMENT_NAMES:
        return ARGUMENT_NAMES[field]
    return _FIELD.sub(lambda m: ARGUMENT_NAMES[m.group(1)], field)


class ServiceRefusal(Exception):
    """A refused call, as the REST API would answer it: its status, code, detail and argument."""

    def __init__(self, status: int, code: str, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail, self.field = status, code, detail, field


def parsed(model: type[M], values: dict[str, Any]) -> M:
    """`values` through the REST API's own request schema: the same checks, the same limits."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
        message = (
            "unknown argument" if first.get("type") == "extra_forbidden" else first.get("msg", "invalid")
        )
        raise ServiceRefusal(422, "invalid", message, argument_name(field)) from None


def _refusal(exc: ServiceError) -> ServiceRefusal:
    field = argument_name(exc.field) if exc.field else None
    return ServiceRefusal(
        exc.status, exc.code, _FIELD.sub(lambda m: ARGUMENT_NAMES[m.group(1)], exc.detail), field
    )


def _message(refusal: ServiceRefusal) -> str:
    where = f"{refusal.field}: " if refusal.field else ""
    return f"{where}{refusal.detail} (code: {refusal.code})"


def run(
    caller: Callable[[], Caller],
    tool: str,
    work: Callable[[Caller], T],
    *,
    session: str = "",
    object_ref: str = "",
) -> T:
    """`work(caller)` as one tool call: a fresh database connection if the old one is stale, refusals
    as ToolError, and an audit entry with the status the REST API would have answered."""
    close_old_connections()
    who = caller()
    status = 200
    try:
        try:
            return work(who)
        except ServiceError as exc:
            raise _refusal(exc) from None
        except DatabaseError as exc:
            log.error("mcp %s: database error: %s", tool, exc)
            raise ServiceRefusal(
                503, "db_unavailable", "the database cannot be used; nothing was changed, try again later"
            ) from None
    except ServiceRefusal as refusal:
        status = refusal.status
        raise ToolError(_message(refusal)) from None
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
