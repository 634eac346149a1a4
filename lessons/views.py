"""Dashboard views for error memory: list and search live lessons, edit a fix, delete.

Reads and writes go through `lessons/services.py`; an expired record is gone (410), another
user's is no record (404).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ottoweb.errors import Invalid, NotFound
from ottoweb.requests import UserRequest

from . import services
from .forms import LessonFixForm, LessonSearchForm
from .models import ErrorRecord

LESSONS_PER_PAGE = 25
EXPIRED_SHOWN = 20


def live_record(view: Callable[[UserRequest, ErrorRecord], HttpResponse]) -> Callable[..., HttpResponse]:
    """`view(request, record)` with the user's live record `record_id`; an expired one answers the
    page that says it is gone (410), another user's or none 404."""

    @wraps(view)
    def with_record(request: UserRequest, record_id: int) -> HttpResponse:
        try:
            record = services.get_live_error(user=request.user, record_id=record_id)
        except NotFound:
            return _gone(request, record_id)
        return view(request, record)

    return with_record


def _gone(request: UserRequest, record_id: int) -> HttpResponse:
    """The page of the user's expired record (410), or 404 when the user never had it."""
    expired = ErrorRecord.objects.for_user(request.user).expired().filter(pk=record_id).first()
    if expired is None:
        raise Http404("no such lesson")
    template = "lessons/list.html#gone-row" if request.htmx else "lessons/gone.html"
    return render(request, template, {"record": expired}, status=410)


def _search(request: UserRequest, params: QueryDict) -> tuple[LessonSearchForm, dict[str, Any], Any]:
    """The list's search form read from `params`, what it asks for, and the live records it finds."""
    form = LessonSearchForm(params)
    form.is_valid()
    # A field the form refuses (a search too long) is not searched by: the page says so.
    data: dict[str, Any] = {"q": "", "tool": "", "match": "semantic", **form.cleaned_data}
    ranked = services.search_errors(
        user=request.user, tool=data["tool"], query=data["q"], match=data["match"]
    )
    return form, data, ranked


@require_GET
@login_required
def lesson_list(request: UserRequest) -> HttpResponse:
    form, data, ranked = _search(request, request.GET)
    page = Paginator(ranked.records, LESSONS_PER_PAGE).get_page(request.GET.get("page"))
    searching = bool(data["q"] or data["tool"])
    expired = []
    if not searching:
        expired = list(
            ErrorRecord.objects.for_user(request.user).expired().order_by("-expires_at")[:EXPIRED_SHOWN]
        )
    context = {
        "page": page,
        "form": form,
        "searching": searching,
        "by_match": bool(data["q"]),
        "refused": " ".join(str(e) for errors in form.errors.values() for e in errors),
        "ranked": ranked,
        "expired": expired,
        "query": data,
    }
    if request.htmx and request.htmx.target == "lesson-list":
        return render(request, "lessons/list.html#lesson-list", context)
    return render(request, "lessons/list.html", context)


@require_http_methods(["GET", "POST"])
@login_required
@live_record
def lesson_edit(request: UserRequest, record: ErrorRecord) -> HttpResponse:
    """GET: the fix as an editable form. POST: rewrite the fix (the TTL is kept: editing is not a hit)."""
    form = LessonFixForm(
        request.POST if request.method == "POST" else None, initial={"action": record.action}
    )
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                record = services.update_error_action(record=record, action=form.cleaned_data["action"])
            except Invalid as exc:
                form.add_error("action", exc.detail)
            else:
                if request.htmx:
                    return render(request, "lessons/list.html#lesson-row", {"record": record, "saved": True})
                messages.success(request, f"Saved the fix for “{record.tool}”.")
                return redirect("lessons")
        status = 422
    context = {"record": record, "form": form}
    template = "lessons/list.html#edit-row" if request.htmx else "lessons/edit.html"
    return render(request, template, context, status=status)


@require_GET
@login_required
@live_record
def lesson_row(request: UserRequest, record: ErrorRecord) -> HttpResponse:
    """One row as it reads (the Cancel of an inline edit)."""
    if not request.htmx:
        return redirect("lessons")
    return render(request, "lessons/list.html#lesson-row", {"record": record})


@require_POST
@login_required
@live_record
def lesson_delete(request: UserRequest, record: ErrorRecord) -> HttpResponse:
    services.delete_error(record=record)
    if request.htmx:
        # The count above the list is the one the page was searching for, one fewer now.
        query = QueryDict(urlsplit(request.htmx.current_url or "").query)
        _, data, ranked = _search(request, query)
        context = {
            "record": record,
            "remaining": len(ranked.records),
            "searching": bool(data["q"] or data["tool"]),
            "by_match": bool(data["q"]),
        }
        return render(request, "lessons/list.html#deleted-row", context)
    messages.success(request, f"Deleted the lesson for “{record.tool}”.")
    return redirect("lessons")
