"""The one NinjaAPI: /api/v1, bearer-token auth, every error as {"detail", "code"}."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.operation import Operation
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from accounts.auth import TokenAuth
from memory.api import notes_router, runs_router, sessions_router
from memory.engine.types import format_moment

from .errors import ServiceError, invalid_value
from .parsing import BoundedParser, NotJson, TooDeep, TooLong

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


class AnswerEncoder(NinjaJSONEncoder):
    def default(self, o: Any) -> Any:
        # Every time in the one form items' `occurred_at` is documented in (engine.types.format_moment):
        # Django's encoder would cut it to milliseconds, and the instant would not come back as sent.
        if isinstance(o, datetime):
            return format_moment(o)
        return super().default(o)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class AnswerRenderer(JSONRenderer):
    """JSON answers that are JSON: never a bare NaN or Infinity (json.dumps writes them by default).

    Nothing stored or echoed holds one (the JSON number policy refuses them on the way in); were a
    computed value ever not finite, it is answered as null and logged, never as invalid JSON.
    """

    encoder_class = AnswerEncoder

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        try:
            return json.dumps(data, cls=self.encoder_class, allow_nan=False)
        except ValueError:
            log.error("a value that is not finite in the answer to %s %s", request.method, request.path)
            return json.dumps(_finite(data), cls=self.encoder_class, allow_nan=False)


api = OttowebAPI(
    title="ottoweb",
    version="1",
    description="Memory for LLM agents: tiered short-term memory, recall, lessons, scoped notes.",
    auth=TokenAuth(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
    parser=BoundedParser(),
    renderer=AnswerRenderer(),
)


def error(request: HttpRequest, status: int, detail: str, code: str, **extra: object) -> HttpResponse:
    return api.create_response(request, {"detail": detail, "code": code, **extra}, status=status)


SOURCES = ("body", "query", "path", "header", "cookie", "form", "file")


def _location(loc: list | tuple) -> list[object]:
    """The field a validation error is about, as the client named it.

    ninja reports (source, view parameter, field…), e.g. ("body", "body", "text") or
    ("query", "params", "limit"); the first two say nothing to a client. A field that happens to
    be called "query" or "body" is kept.
    """
    parts = list(loc)
    if parts and parts[0] in SOURCES:
        parts = parts[1:]
        if len(parts) > 1:
            parts = parts[1:]
    return parts


def _dotted(parts: Sequence[object]) -> str:
    # pydantic's own spelling of a location (items.1.text), which /runs/fit's transcript checks
    # share; the services name theirs items[1].text.
    return ".".join(str(p) for p in parts)


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {}
    refusal = invalid_value(first, _location(first.get("loc", ())), spell=_dotted)
    return error(request, 422, refusal.detail, refusal.code, field=refusal.field, errors=exc.errors)


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
    if isinstance(exc.__cause__, NotJson):
        # ninja turns any parser exception into a 400 "Cannot parse request body"; the body is
        # refused as an import's document is (memory/api/sessions.py), saying what is wrong with it.
        return error(request, 422, f"the body {exc.__cause__}", "invalid", field="body")
    if isinstance(exc.__cause__, TooDeep | TooLong):
        # Valid JSON the server refuses, saying why.
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


def allow_with_head(allow: str) -> str:
    """An Allow header's value with HEAD after GET when it lists GET (HeadAsGet answers HEAD there)."""
    methods = [method.strip() for method in allow.split(",") if method.strip()]
    if "GET" in methods and "HEAD" not in methods:
        methods.insert(methods.index("GET") + 1, "HEAD")
    return ", ".join(methods)


class HeadAsGet:
    """HEAD is answered as GET is, headers and status, with no body (RFC 9110: a resource that
    takes GET takes HEAD); ninja routes by method and Django's `require_GET` refuses HEAD, so both
    would answer 405. A 405 that lists GET in its Allow header lists HEAD too."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method != "HEAD":
            return self.with_head_allowed(self.get_response(request))
        request.method = "GET"
        response = self.with_head_allowed(self.get_response(request))
        if not response.streaming:
            length = len(response.content)
            response.content = b""
            response["Content-Length"] = str(length)
        return response

    @staticmethod
    def with_head_allowed(response: HttpResponse) -> HttpResponse:
        if response.status_code == 405 and "Allow" in response:
            response["Allow"] = allow_with_head(response["Allow"])
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
            allowed = allow_with_head(response.get("Allow", ""))
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
