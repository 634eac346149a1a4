"""The scoped notes pages (docs/decisions.md): scopes, a scope's notes, deleting them."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ottoweb.errors import Invalid
from ottoweb.requests import UserRequest

from ..models import ScopedMemory
from ..services import notes as scoped
from ..services import scopes

NOTES_PER_PAGE = 20


@require_GET
@login_required
def notes(request: UserRequest) -> HttpResponse:
    """The user's scopes and, for the chosen one (or every scope), a page of its notes, newest first."""
    key = request.GET.get("scope", "")
    try:
        arguments: scopes.ScopeArguments = scopes.scope_arguments(key) if key else {}
        page_number = max(1, int(request.GET.get("page", "1") or 1))
        rows, count = scoped.list_notes(
            user=request.user, limit=NOTES_PER_PAGE, offset=(page_number - 1) * NOTES_PER_PAGE, **arguments
        )
    except (Invalid, ValueError):
        raise Http404("no such scope") from None
    return render(
        request,
        "memory/notes.html",
        {
            "scopes": scoped.scopes_of(user=request.user),
            "scope": key,
            "rows": rows,
            "count": count,
            "page_number": page_number,
            "has_next": page_number * NOTES_PER_PAGE < count,
        },
    )


@require_POST
@login_required
def delete_note(request: UserRequest, note_id: int) -> HttpResponse:
    note = get_object_or_404(ScopedMemory.objects.filter(user=request.user), pk=note_id)
    scoped.delete_note(note=note)
    messages.success(request, f"Deleted a note of {note.project_key}.")
    return redirect(f"{reverse('notes')}?scope={note.project_key}")


@require_POST
@login_required
def delete_scope(request: UserRequest) -> HttpResponse:
    try:
        scope, deleted = scoped.delete_scope(
            user=request.user, **scopes.scope_arguments(request.POST.get("scope", ""))
        )
    except Invalid:
        raise Http404("no such scope") from None
    messages.success(request, f"Deleted {deleted} note{'s' if deleted != 1 else ''} of {scope.project_key}.")
    return redirect("notes")
