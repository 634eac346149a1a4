"""The one NinjaAPI: /api/v1, bearer-token auth, every error as {"detail", "code"}."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.operation import Operation

from memory.api import notes_router, runs_router, sessions_router
from memory.auth import TokenAuth

from .errors import ServiceError
from .parsing import BoundedParser, TooDeep

log = logging.getLogger(__name__)

# Published operation ids (clients name their methods after them) are ninja's "<module>_<function>"
# of the modules the operations were first written in; memory/api/ keeps them.
OPERATION_ID_PREFIXES = {
    "memory.api.sessions": "memory_api",
    "memory.api.runs": "memory_runs_api",
    "memory.api.notes": "memory_scoped_api",
}


class OttowebAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        prefix = OPERATION_ID_PREFIXES.get(operation.view_func.__module__)
        if prefix is None:
            return super().get_openapi_operation_id(operation)
        return f"{prefix}_{operation.view_func.__name__}"


api = OttowebAPI(
    title="ottoweb",
    version="1",
    description="Memory for LLM agents: tiered short-term memory, recall, lessons, scoped notes.",
    auth=TokenAuth(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
    parser=BoundedParser(),
)


def error(request: HttpRequest, status: int, detail: str, code: str, **extra: object) -> HttpResponse:
    return api.create_response(request, {"detail": detail, "code": code, **extra}, status=status)


SOURCES = ("body", "query", "path", "header", "cookie", "form", "file")


def _location(loc: list | tuple) -> str:
    """The field a validation error is about, as the client named it.

    ninja reports (source, view parameter, field…), e.g. ("body", "body", "text") or
    ("query", "params", "limit"); the first two say nothing to a client. A field that happens to
    be called "query" or "body" is kept.
    """
    parts = [str(p) for p in loc]
    if parts and parts[0] in SOURCES:
        parts = parts[1:]
        if len(parts) > 1:
            parts = parts[1:]
    return ".".join(parts) or "body"


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {}
    field = _location(first.get("loc", ()))
    message = first.get("msg", "invalid value")
    if first.get("type") == "extra_forbidden":
        message = "unknown field"
    return error(request, 422, f"{field}: {message}", "invalid", field=field, errors=exc.errors)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error(
        request, 401, "missing or invalid bearer token (Authorization: Bearer <token>)", "unauthorized"
    )


@api.exception_handler(ServiceError)
def on_service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    extra = {"field": exc.field} if exc.field else {}
    response = error(request, exc.status, exc.detail, exc.code, **extra)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, str(exc) or "not found", "not_found")


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, TooDeep):
        # ninja turns any parser exception into a 400 "Cannot parse request body"; this one is
        # valid JSON the server refuses, and says why.
        return error(request, 422, str(exc.__cause__), "invalid", field="body")
    return error(request, exc.status_code, str(exc), "http_error")


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error(request, 413, "request body is larger than the server accepts", "too_large")


# (words in the driver's message, code, what the client is told); the first match wins.
DATABASE_FAULTS = (
    (("readonly", "read-only"), "db_read_only", "the database is read-only"),
    (("full", "no space"), "db_full", "the database's disk is full"),
    (("locked", "busy"), "db_busy", "the database is busy"),
)


@api.exception_handler(DatabaseError)
def on_database_error(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    """A fault of the server's storage (read-only, disk full, gone): 503, never a 500 HTML page.

    Every write runs in a transaction, so the failed request has been rolled back whole.
    """
    log.error("database error on %s %s: %s", request.method, request.path, exc)
    message = str(exc).lower()
    code, what = "db_unavailable", "the database cannot be used"
    for words, fault_code, fault in DATABASE_FAULTS:
        if any(word in message for word in words):
            code, what = fault_code, fault
            break
    response = error(request, 503, f"{what}; the request was not carried out, try again later", code)
    response["Retry-After"] = "30"
    return response


class MethodNotAllowedAsJson:
    """ninja answers a method a path does not take with a plain-text 405 before any handler runs;
    the API's clients get the same {"detail", "code"} as every other error, and the Allow header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 405
            and request.path.startswith("/api/")
            and "json" not in response.get("Content-Type", "")
        ):
            allowed = response.get("Allow", "")
            answer = error(
                request,
                405,
                f"{request.method} is not allowed on {request.path}; it takes {allowed or 'no method'}",
                "method_not_allowed",
            )
            answer["Allow"] = allowed
            return answer
        return response


api.add_router("/", sessions_router)
api.add_router("/", runs_router)
api.add_router("/lessons", "lessons.api.router")
api.add_router("/memory", notes_router)
