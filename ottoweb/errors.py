"""The refusals every layer shares: a service raises one, the API and the dashboard answer it.

Each carries the HTTP `status` and machine `code` the client gets, and the words of `detail`
(docs/api.md, "Errors"); `field` names the input at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any


class ServiceError(Exception):
    """A refused request: `status` and `code` go to the client with the message."""

    status = 400
    code = "bad_request"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class Invalid(ServiceError):
    status = 422
    code = "invalid"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class TooManyJobs(ServiceError):
    """The user already has OTTO_MAX_QUEUED_JOBS jobs waiting; answered 429 with Retry-After."""

    status = 429
    code = "too_many_jobs"
    retry_after = 30


class TooManyPins(ServiceError):
    """A pin past the session's cap: OTTO_MAX_PINS pinned turns, or pinned tokens past the session's
    protected share of Y (docs/sessions.md, "Pins"); nothing is written."""

    status = 409
    code = "too_many_pins"


class TooLarge(ServiceError):
    """A request beyond a documented size limit (README, "Limits"); nothing is written."""

    status = 413
    code = "too_large"


def field_path(parts: Sequence[object]) -> str:
    """A location as a service's refusal (and an MCP tool's) names it: ("items", 2, "meta") is
    `items[2].meta`."""
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def invalid_value(
    error: Mapping[str, Any],
    parts: Sequence[object],
    *,
    spell: Callable[[Sequence[object]], str] = field_path,
    whole: str = "body",
    unknown: str = "unknown field",
) -> Invalid:
    """One pydantic validation error as the Invalid every interface answers: the field (down to
    the value a check named inside it: `items[2].meta.a`) and `<field>: <what is wrong>`.

    `parts` is the error's location as the client named it, spelled by `spell` (`whole` when it
    names nothing); `unknown` the words for a name the shape does not have ("unknown field" in a
    body, "unknown argument" in a tool call).
    """
    context = error.get("ctx") or {}
    field = spell([*parts, *context.get("path", ())]) or whole
    message = unknown if error.get("type") == "extra_forbidden" else str(error.get("msg", "invalid value"))
    return Invalid(f"{field}: {message}", field=field)
