"""The refusals every layer shares: a service raises one, the API and the dashboard answer it.

Each carries the HTTP `status` and machine `code` the client gets, and the words of `detail`
(docs/api.md, "Errors"); `field` names the input at fault.
"""

from __future__ import annotations


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
