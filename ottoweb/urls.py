from __future__ import annotations

from django.conf import settings
from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.static import serve

from .api import api


# Exempt: the CSRF middleware would otherwise answer a POST to an unknown /api/ path with its
# HTML 403 page before this view runs; the API takes no cookies, so there is nothing to protect.
@csrf_exempt
def api_not_found(request: HttpRequest) -> HttpResponse:
    """An /api/ path no operation has: the API's own 404 shape, never the HTML page."""
    return api.create_response(request, {"detail": "no such API path", "code": "not_found"}, status=404)


urlpatterns = [
    path("api/v1/", api.urls),
    re_path(r"^api/", api_not_found),
    path("", include("accounts.urls")),
    path("lessons/", include("lessons.urls")),
    path("", include("memory.urls")),
]


def static_file(request: HttpRequest, path: str) -> HttpResponseBase:
    """Serve a static file from the project or an app (ninja's Swagger UI): nothing from a CDN."""
    found = finders.find(path)
    if not found or ".." in path.split("/"):
        raise Http404(path)
    folder = str(found)[: -len(path)]
    return serve(request, path, document_root=folder)


if settings.SERVE_STATIC:
    urlpatterns += [re_path(r"^static/(?P<path>.+)$", static_file)]
