"""The Content-Security-Policy every answer carries: this site's own scripts, styles and requests only.

The dashboard has no inline script, style or event attribute (the fill bars' widths are classes,
the banner and confirmations live in static/ottoweb.js), htmx is served from static/vendor and told
not to inject its indicator style or evaluate anything (base.html's htmx-config), and the API docs
are ninja's own Swagger UI files. `img-src data:` is for the icons Swagger UI's stylesheet inlines.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicy:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
