"""The one NinjaAPI: /api/v1, bearer-token auth, every error as {"detail", "code"}."""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from memory.api import router as memory_router
from memory.auth import TokenAuth
from memory.services import ServiceError

log = logging.getLogger(__name__)

api = NinjaAPI(
    title="ottoweb",
    version="1",
    description="Memory for LLM agents: tiered short-term memory, recall, lessons, scoped notes.",
    auth=TokenAuth(),
    urls_namespace="api",
    docs_url="/docs",
    openapi_url="/openapi.json",
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
    return error(request, exc.status, exc.detail, exc.code, **extra)


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error(request, 404, str(exc) or "not found", "not_found")


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return error(request, exc.status_code, str(exc), "http_error")


@api.exception_handler(RequestDataTooBig)
def on_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return error(request, 413, "request body is larger than the server accepts", "too_large")


api.add_router("/", memory_router)
api.add_router("/", "memory.runs_api.router")
api.add_router("/lessons", "lessons.api.router")
api.add_router("/memory", "memory.scoped_api.router")
