"""Dashboard views: thin glue from HTTP to one read or one service call.

Every view fetches through a query that starts from the user (another user's session is a 404),
validates with a form, calls one service and, for an htmx request, renders just the partial that
changed; without JavaScript the same URLs render whole pages or redirect.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.contrib.auth.tokens import default_token_generator
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from ottoweb.errors import Invalid, ServiceError, TooLarge, TooManyJobs

from . import dashboard, services
from .forms import ImportForm, RecallForm, ResetForm, SessionSearchForm, TokenForm
from .models import (
    TIER_ARCHIVED,
    TIER_X,
    TIER_Y,
    ApiToken,
    AuditEntry,
    Bullet,
    Item,
    Job,
    LearnedWindow,
    ScopedMemory,
    Session,
)
from .recall import DEFAULT_MAX_TOKENS, recall
from .services import notes as scoped
from .services import runs

SESSIONS_PER_PAGE = 20
TABS = ("summary", "compact", "reset")
# After a change to the session, regions that show it reload themselves (hx-trigger "... from:body").
SESSION_CHANGED = "session-changed"


def _session_for(request: HttpRequest, sid: str) -> Session:
    """The user's session `sid` with its token totals, or 404: another user's is no session."""
    session = Session.objects.for_user(request.user).with_totals().filter(sid=sid).first()
    if session is None:
        raise Http404("no such session")
    return session


def _partial_target(request: HttpRequest) -> str | None:
    """The region an htmx request asked for (its hx-target id), None for a whole page."""
    return request.htmx.target if request.htmx else None  # type: ignore[attr-defined]


def _changed(response: HttpResponse) -> HttpResponse:
    return trigger_client_event(response, SESSION_CHANGED, after="swap")


# --- sessions list and import --------------------------------------------------------------------


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    form = SessionSearchForm(request.GET)
    q = form.cleaned_data["q"] if form.is_valid() else ""
    rows = Session.objects.for_user(request.user).with_totals().matching(q).order_by("-updated_at", "-pk")
    page = Paginator(rows, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"page": page, "q": q, "import_form": ImportForm()}
    if _partial_target(request) == "session-list":
        return render(request, "memory/home.html#session-list", context)
    return render(request, "memory/home.html", context)


@require_POST
@login_required
def import_view(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            session = services.import_session(
                user=request.user, document=form.cleaned_data["file"], sid=form.cleaned_data["sid"]
            )
        except ServiceError as exc:
            where = f" (at {exc.field})" if exc.field else ""
            form.add_error("sid" if exc.field == "id" else "file", f"{exc.detail}{where}")
        else:
            messages.success(request, f"Imported session {session.sid}. Its vectors are being written.")
            return redirect("session", sid=session.sid)
    rows = Session.objects.for_user(request.user).with_totals().order_by("-updated_at", "-pk")
    page = Paginator(rows, SESSIONS_PER_PAGE).get_page(1)
    context = {"page": page, "q": "", "import_form": form, "import_open": True}
    return render(request, "memory/home.html", context, status=422)


# --- one session ---------------------------------------------------------------------------------


def _recall_context(request: HttpRequest, session: Session) -> dict[str, Any]:
    if "q" not in request.GET:
        return {"recall_form": RecallForm(initial={"match": "semantic", "kind": "all"}), "recalled": None}
    form = RecallForm(request.GET)
    if not form.is_valid():
        return {"recall_form": form, "recalled": None}
    data = form.cleaned_data
    found = recall(session, query=data["q"], kind=data["kind"], match=data["match"])
    found["count"] = sum(len(found["results"][k]) for k in ("history", "context"))
    found["max_tokens"] = DEFAULT_MAX_TOKENS
    # Words are marked in an exact-words search only: a match by meaning need not share a word.
    found["mark"] = data["q"] if data["match"] == "keyword" else ""
    return {"recall_form": form, "recalled": found}


def _tab_context(session: Session, tab: str, request: HttpRequest) -> dict[str, Any]:
    if tab == "summary":
        bullets = Bullet.objects.of_kind(session, "history").live().order_by("first_position", "id")
        return {
            "bullets": bullets,
            "y_turns": dashboard.live_turns(session, TIER_Y),
            "x_turns": dashboard.live_turns(session, TIER_X),
        }
    if tab == "compact":
        return _compact_context(session)
    form = ResetForm(request.GET) if "mode" in request.GET else ResetForm()
    mode = form.cleaned_data["mode"] if form.is_valid() else None
    kept = dashboard.cited_archived_turns(session) if mode == "summary" else 0
    archived = Item.objects.filter(session=session, kind="history", tier=TIER_ARCHIVED).count()
    return {"reset_form": form, "reset_mode": mode, "kept_turns": kept, "lost_archived": archived - kept}


def _compact_context(session: Session) -> dict[str, Any]:
    due = services.queue_for(session, "history").needs_compaction()
    jobs = Job.objects.filter(session=session, kind="compact").order_by("-created_at")[:3]
    return {"y_pending": dashboard.pending_tokens(session), "compaction_due": due, "compact_jobs": jobs}


@require_GET
@login_required
def session_page(request: HttpRequest, sid: str) -> HttpResponse:
    session = _session_for(request, sid)
    tab = request.GET.get("tab", "summary")
    if tab not in TABS:
        tab = "summary"
    target = _partial_target(request)
    context: dict[str, Any] = {"session": session, "tab": tab}
    if target == "tiers":
        context.update(tiers=dashboard.tiers(session), timeline=dashboard.generation_timeline(session))
        return render(request, "memory/session.html#tiers", context)
    if target == "recall-results":
        context.update(_recall_context(request, session))
        return render(request, "memory/session.html#recall-results", context)
    if target == "compact-preview":
        context.update(tiers=dashboard.tiers(session), **_compact_context(session))
        return render(request, "memory/session.html#compact-preview", context)
    context.update(tiers=dashboard.tiers(session), **_tab_context(session, tab, request))
    if target == "memory-tabs":
        return render(request, "memory/session.html#memory-tabs", context)
    context.update(
        timeline=dashboard.generation_timeline(session),
        jobs=Job.objects.filter(session=session, kind="reembed").unfinished().order_by("-created_at")[:1],
        **_recall_context(request, session),
    )
    return render(request, "memory/session.html", context)


@require_GET
@login_required
def bullet_turns(request: HttpRequest, sid: str, bullet_id: int) -> HttpResponse:
    session = _session_for(request, sid)
    bullet = get_object_or_404(Bullet.objects.filter(session=session), pk=bullet_id)
    context = {"session": session, "bullet": bullet, "cited": dashboard.cited_turns(session, bullet)}
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "memory/bullet.html#cited", context)
    return render(request, "memory/bullet.html", context)


@require_POST
@login_required
def compact(request: HttpRequest, sid: str) -> HttpResponse:
    """Compact now (X and Y into a new generation, in this request) or, with `background`, run the
    compaction Y's overflow is due as a job whose progress the page polls."""
    session = _session_for(request, sid)
    if request.POST.get("background"):
        job = services.enqueue_compaction(session=session)
        if request.htmx:  # type: ignore[attr-defined]
            return render(request, "memory/_job.html", {"job": job, "session": session})
        return redirect("job", job_id=job.id)
    result = services.memory_action(session=session, action="compact")
    if result.get("job_id"):  # larger than a request should compact: the worker's, and the page follows it
        job = Job.objects.get(pk=result["job_id"])
        if request.htmx:  # type: ignore[attr-defined]
            return render(request, "memory/_job.html", {"job": job, "session": session})
        return redirect("job", job_id=job.id)
    removed = result["removed"]
    note = (
        f"Compacted: {removed} turn{'s' if removed != 1 else ''} archived and summarised."
        if removed
        else "Nothing to compact: X and Y hold no raw turns."
    )
    if request.htmx:  # type: ignore[attr-defined]
        session = _session_for(request, sid)
        context = {"session": session, "tiers": dashboard.tiers(session), "note": note}
        context.update(_compact_context(session))
        return _changed(render(request, "memory/session.html#compact-preview", context))
    messages.success(request, note)
    return redirect(reverse("session", args=[session.sid]) + "?tab=compact")


@require_POST
@login_required
def reset(request: HttpRequest, sid: str) -> HttpResponse:
    session = _session_for(request, sid)
    form = ResetForm(request.POST)
    if not form.is_valid():
        if not request.htmx:  # type: ignore[attr-defined]
            messages.error(request, "Choose what to reset: keep the summary, or wipe everything.")
            return redirect(reverse("session", args=[session.sid]) + "?tab=reset")
        context = {"session": session, "tab": "reset", "tiers": dashboard.tiers(session)}
        context.update(reset_form=form, reset_mode=None)
        return render(request, "memory/session.html#memory-tabs", context, status=422)
    mode = form.cleaned_data["mode"]
    services.memory_action(session=session, action="reset", mode=mode)
    note = (
        "Reset: the conversation was cleared; the rolling summary was kept with the turns it cites."
        if mode == "summary"
        else "Reset: every turn and the whole summary were deleted."
    )
    if request.htmx:  # type: ignore[attr-defined]
        session = _session_for(request, sid)
        context = {"session": session, "tab": "reset", "tiers": dashboard.tiers(session), "note": note}
        context.update(reset_form=ResetForm(), reset_mode=None)
        return _changed(render(request, "memory/session.html#memory-tabs", context))
    messages.success(request, note)
    return redirect(reverse("session", args=[session.sid]) + "?tab=reset")


@require_GET
@login_required
def export(request: HttpRequest, sid: str) -> HttpResponse:
    session = _session_for(request, sid)
    try:
        # The same bytes the API sends: within the import limit, so the file imports back.
        data = services.export_session_json(session)
    except TooLarge as exc:
        return HttpResponse(exc.detail, status=413, content_type="text/plain; charset=utf-8")
    response = HttpResponse(data, content_type="application/json; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="ottoweb-{session.sid}.json"'
    return response


@require_POST
@login_required
def reembed(request: HttpRequest, sid: str) -> HttpResponse:
    session = _session_for(request, sid)
    try:
        job = services.enqueue_reembed(session=session)
    except TooManyJobs as exc:
        response = HttpResponse(exc.detail, status=429, content_type="text/plain")
        response["Retry-After"] = str(exc.retry_after)
        return response
    if request.htmx:  # type: ignore[attr-defined]
        return render(request, "memory/_job.html", {"job": job, "session": session})
    return redirect("job", job_id=job.id)


@require_http_methods(["GET", "POST"])
@login_required
def delete(request: HttpRequest, sid: str) -> HttpResponse:
    """GET asks for confirmation (saying what goes); POST deletes and returns to the list."""
    session = _session_for(request, sid)
    if request.method == "POST":
        services.delete_session(session=session)
        messages.success(request, f"Deleted session {sid} and everything in it.")
        return redirect("home")
    return render(request, "memory/delete.html", {"session": session, "tiers": dashboard.tiers(session)})


@require_GET
@login_required
def job(request: HttpRequest, job_id: str) -> HttpResponse:
    """A job's progress. htmx polls the partial; a finished job answers 286, which stops the polling."""
    row = get_object_or_404(Job.objects.for_user(request.user).select_related("session"), pk=job_id)
    context = {"job": row, "session": row.session}
    if not request.htmx:  # type: ignore[attr-defined]
        return render(request, "memory/job.html", context)
    response = render(request, "memory/_job.html", context)
    if row.status in (Job.DONE, Job.FAILED):
        return _changed(HttpResponseStopPolling(response.content))
    return response


# --- account: password and API tokens ------------------------------------------------------------


def _password_form(request: HttpRequest, data: Any = None) -> SetPasswordForm | PasswordChangeForm:
    if request.user.has_usable_password():
        return PasswordChangeForm(request.user, data)
    return SetPasswordForm(request.user, data)


def _account(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    tokens = ApiToken.objects.filter(user=request.user).order_by("revoked_at", "-created_at")
    context = {
        "tokens": tokens,
        "token_form": TokenForm(),
        "password_form": _password_form(request),
        "learned": runs.learned_limits(user=request.user),
    }
    context.update(extra)
    return context


@require_http_methods(["GET", "POST"])
@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """GET lists the tokens; POST issues one and shows it once (only its digest is kept)."""
    if request.method == "GET":
        return render(request, "memory/account.html", _account(request))
    form = TokenForm(request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, token_form=form), status=422)
    row, plain = services.issue_token(user=request.user, name=form.cleaned_data["name"])
    return render(request, "memory/account.html", _account(request, issued=row, plain=plain), status=201)


@require_POST
@login_required
def revoke_token(request: HttpRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.filter(user=request.user), pk=token_id)
    services.revoke_token(token=token)
    messages.success(request, f"Revoked token “{token.name}”: it no longer works.")
    return redirect("tokens")


@require_POST
@login_required
def clear_learned(request: HttpRequest, learned_id: int) -> HttpResponse:
    """Forget a window limit this user's runs taught; their fits use the table's window again."""
    row = get_object_or_404(LearnedWindow.objects.filter(user=request.user), pk=learned_id)
    runs.clear_learned_limit(user=request.user, model=row.model)
    messages.success(request, f"Cleared the learned limit of {row.model}: its table window applies again.")
    return redirect("tokens")


@require_POST
@login_required
def password(request: HttpRequest) -> HttpResponse:
    form = _password_form(request, request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, password_form=form), status=422)
    user = form.save()
    # Changing the password ends other logins; keep this one.
    from django.contrib.auth import update_session_auth_hash

    update_session_auth_hash(request, user)
    messages.success(request, "Password saved. You can log in with it from now on.")
    return redirect("tokens")


# --- scoped notes (docs/decisions.md) ------------------------------------------------------------------------

NOTES_PER_PAGE = 20


@require_GET
@login_required
def notes(request: HttpRequest) -> HttpResponse:
    """The user's scopes and, for the chosen one (or every scope), a page of its notes, newest first."""
    key = request.GET.get("scope", "")
    try:
        arguments = scoped.scope_arguments(key) if key else {}
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
def delete_note(request: HttpRequest, note_id: int) -> HttpResponse:
    note = get_object_or_404(ScopedMemory.objects.filter(user=request.user), pk=note_id)
    scoped.delete_note(note=note)
    messages.success(request, f"Deleted a note of {note.project_key}.")
    return redirect(f"{reverse('notes')}?scope={note.project_key}")


@require_POST
@login_required
def delete_scope(request: HttpRequest) -> HttpResponse:
    try:
        scope, deleted = scoped.delete_scope(
            user=request.user, **scoped.scope_arguments(request.POST.get("scope", ""))
        )
    except Invalid:
        raise Http404("no such scope") from None
    messages.success(request, f"Deleted {deleted} note{'s' if deleted != 1 else ''} of {scope.project_key}.")
    return redirect("notes")


# --- one-time login links (manage.py login_link) -------------------------------------------------


def _link_user(uidb64: str, token: str) -> Any:
    try:
        user = get_user_model().objects.filter(pk=force_str(urlsafe_base64_decode(uidb64))).first()
    except (ValueError, TypeError, OverflowError):
        return None
    if user is None or not user.is_active or not default_token_generator.check_token(user, token):
        return None
    return user


@require_http_methods(["GET", "POST"])
def login_link(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """GET shows a button (so a link previewer cannot spend the link); POST logs in, once.

    The token is Django's password-reset token: it dies with the first login (last_login changes),
    with a password change, and after PASSWORD_RESET_TIMEOUT.
    """
    user = _link_user(uidb64, token)
    if user is None:
        return render(request, "registration/login_link.html", {"expired": True}, status=410)
    if request.method == "GET":
        return render(request, "registration/login_link.html", {"link_user": user})
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    if not user.has_usable_password():
        messages.info(request, "Welcome! Set a password below to log in again without a link.")
        return redirect("tokens")
    return redirect("home")


@require_GET
@login_required
def audit(request: HttpRequest) -> HttpResponse:
    """The user's audit trail (every state-changing call and action), optionally one session's."""
    sid = request.GET.get("session", "")[:128]
    rows = AuditEntry.objects.for_user(request.user, sid)
    page = Paginator(rows.order_by("-created_at", "-id"), 50).get_page(request.GET.get("page"))
    extra = f"session={quote(sid)}&" if sid else ""
    return render(
        request, "memory/audit.html", {"page": page, "sid": sid, "extra": extra, "region": "audit-list"}
    )
