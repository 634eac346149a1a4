"""The production web app (`make run` serves it with uvicorn): Django, MCP at /mcp, static files.

One ASGI process: /mcp (and its RFC 9728 metadata) goes to the MCP SDK's app, /static/ to
Starlette's StaticFiles (ETag, Last-Modified, HEAD, ranges; none of Django's debug machinery), and
everything else to Django as a WSGI app on a pool of OTTO_WEB_THREADS threads (a2wsgi). Every view
and middleware of ours is sync: through Django's own ASGI handler a request crossed between the event
loop and threads three times, and an append cost 8 % more CPU and 10 % more time (docs/mcp.md).
"""

from __future__ import annotations

import os

from a2wsgi import WSGIMiddleware
from django.apps import apps
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from starlette.exceptions import HTTPException
from starlette.responses import PlainTextResponse
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

from ottoweb.cores import one_core_per_request
from ottoweb.heap import ReleaseAfterLargeRequests, tune_malloc

# Before any thread starts or any request is read: large buffers are handed back when freed.
tune_malloc()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ottoweb.settings")
# As in wsgi.py: one core for each request's embedding and vector math.
one_core_per_request()
# Django's threads here are a fixed pool: each keeps its SQLite connection instead of opening one
# per request (settings.py, CONN_MAX_AGE).
os.environ.setdefault("OTTO_CONN_MAX_AGE", "600")
# a2wsgi declares its own WSGI and ASGI types; Django's handler and Starlette's scope are those at run time.
django_app = WSGIMiddleware(get_wsgi_application(), workers=settings.OTTO_WEB_THREADS)  # type: ignore[arg-type]

from memory.mcp.http import METADATA_PATH, PATH, mcp_app  # noqa: E402 (needs Django set up)

mcp = mcp_app()
STATIC_PREFIX = "/" + settings.STATIC_URL.strip("/")


def _static_files() -> StaticFiles:
    """The project's static/ first, then each app's static/ folder: what Django's finders find."""
    packages: list[str | tuple[str, str]] = [
        (config.name, "static")
        for config in apps.get_app_configs()
        if os.path.isdir(os.path.join(config.path, "static"))
    ]
    return StaticFiles(directory=str(settings.STATICFILES_DIRS[0]), packages=packages)


static = _static_files()


async def route(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        # Django takes no lifespan events; the MCP session manager starts and stops with the server.
        await mcp(scope, receive, send)
        return
    path = scope.get("path", "")
    if path == PATH or path.startswith(PATH + "/") or path.startswith(METADATA_PATH):
        await mcp(scope, receive, send)
    elif settings.SERVE_STATIC and path.startswith(STATIC_PREFIX + "/") and scope["type"] == "http":
        try:
            await static({**scope, "root_path": scope.get("root_path", "") + STATIC_PREFIX}, receive, send)
        except HTTPException as exc:  # raised before anything was sent: a missing file, a bad method
            await PlainTextResponse(exc.detail, status_code=exc.status_code)(scope, receive, send)
    else:
        await django_app(scope, receive, send)  # type: ignore[arg-type]


# After a request that moved megabytes, the pages its buffers used go back to the system.
application = ReleaseAfterLargeRequests(route)
