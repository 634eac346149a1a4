"""What the dashboard's views share: the user's session, the region an htmx request asked for, and
the event that tells the page a session changed."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django_htmx.http import trigger_client_event

from ottoweb.errors import NotFound
from ottoweb.requests import UserRequest

from ..models import Session
from ..services.sessions import get_user_session

# After a change to the session, regions that show it reload themselves (hx-trigger "... from:body").
SESSION_CHANGED = "session-changed"


def session_for(request: UserRequest, sid: str) -> Session:
    """The user's session `sid` with its token totals, or 404: another user's is no session."""
    try:
        return get_user_session(request.user, sid, totals=True)
    except NotFound:
        raise Http404("no such session") from None


def partial_target(request: UserRequest) -> str | None:
    """The region an htmx request asked for (its hx-target id), None for a whole page."""
    return request.htmx.target if request.htmx else None


def changed(response: HttpResponse) -> HttpResponse:
    """`response`, telling the page (after the swap) that the session changed."""
    return trigger_client_event(response, SESSION_CHANGED, after="swap")
