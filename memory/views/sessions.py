"""The sessions pages: the list and import, one session's tiers, recall and actions."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ottoweb.errors import Invalid, NotFound, ServiceError, TooLarge, TooManyJobs, TooManyPins
from ottoweb.requests import UserRequest

from .. import reads, services
from ..forms import ImportForm, RecallForm, ResetForm, SessionSearchForm
from ..models import TIER_ARCHIVED, TIER_X, TIER_Y, Bullet, Item, Job, Session
from ..recall import DEFAULT_MAX_TOKENS, recall
from .common import changed, partial_target, session_for

SESSIONS_PER_PAGE = 20
TABS = ("summary", "compact", "reset")
# The pin toggle's `pinned` field: pin, or unpin.
PIN_VALUES = {"1": True, "0": False}


# --- sessions list and import --------------------------------------------------------------------


@require_GET
@login_required
def home(request: UserRequest) -> HttpResponse:
    form = SessionSearchForm(request.GET)
    q = form.cleaned_data["q"] if form.is_valid() else ""
    rows = Session.objects.for_user(request.user).with_totals().matching(q).order_by("-updated_at", "-pk")
    page = Paginator(rows, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    # A refused search (too long) is said above the whole list, which is what is shown.
    refused = " ".join(str(e) for e in form.errors.get("q", []))
    context = {"page": page, "q": q, "refused": refused, "import_form": ImportForm()}
    if partial_target(request) == "session-list":
        return render(request, "memory/home.html#session-list", context)
    return render(request, "memory/home.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def import_view(request: UserRequest) -> HttpResponse:
    """POST imports a file. GET (the address a refused import stays at, reloaded or opened again
    later) goes to the sessions list, where the import form is."""
    if request.method == "GET":
        return redirect("home")
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


def _recall_context(request: UserRequest, session: Session) -> dict[str, Any]:
    if "q" not in request.GET:
        return {"recall_form": RecallForm(initial={"match": "semantic", "kind": "all"}), "recalled": None}
    form = RecallForm(request.GET)
    if not form.is_valid():
        return {"recall_form": form, "recalled": None}
    data = form.cleaned_data
    try:
        found = recall(session, query=data["q"], kind=data["kind"], match=data["match"])
    except Invalid as exc:  # what the service refuses is said on the form, never a 500
        form.add_error("q", exc.detail)
        return {"recall_form": form, "recalled": None}
    found["count"] = sum(len(found["results"][k]) for k in ("history", "context"))
    found["max_tokens"] = DEFAULT_MAX_TOKENS
    # Words are marked in an exact-words search only: a match by meaning need not share a word.
    found["mark"] = data["q"] if data["match"] == "keyword" else ""
    return {"recall_form": form, "recalled": found}


def _tab_context(session: Session, tab: str, request: UserRequest) -> dict[str, Any]:
    if tab == "summary":
        return {
            "pinned_turns": reads.pinned_turns(session),
            "bullets": reads.summary_bullets(session),
            "y_turns": reads.live_turns(session, TIER_Y),
            "x_turns": reads.live_turns(session, TIER_X),
        }
    if tab == "compact":
        return _compact_context(session)
    form = ResetForm(request.GET) if "mode" in request.GET else ResetForm()
    mode = form.cleaned_data["mode"] if form.is_valid() else None
    kept = reads.cited_archived_turns(session) if mode == "summary" else 0
    archived = Item.objects.filter(session=session, kind="history", tier=TIER_ARCHIVED).count()
    return {"reset_form": form, "reset_mode": mode, "kept_turns": kept, "lost_archived": archived - kept}


def _compact_context(session: Session) -> dict[str, Any]:
    due = services.queue_for(session, "history").needs_compaction()
    jobs = Job.objects.filter(session=session, kind="compact").order_by("-created_at")[:3]
    return {"y_pending": reads.pending_tokens(session), "compaction_due": due, "compact_jobs": jobs}


@require_GET
@login_required
def session_page(request: UserRequest, sid: str) -> HttpResponse:
    session = session_for(request, sid)
    tab = request.GET.get("tab", "summary")
    if tab not in TABS:
        tab = "summary"
    target = partial_target(request)
    context: dict[str, Any] = {"session": session, "tab": tab}
    if target == "tiers":
        context.update(tiers=reads.tiers(session), timeline=reads.generation_timeline(session))
        return render(request, "memory/session.html#tiers", context)
    if target == "recall-results":
        context.update(_recall_context(request, session))
        return render(request, "memory/session.html#recall-results", context)
    if target == "compact-preview":
        context.update(tiers=reads.tiers(session), **_compact_context(session))
        return render(request, "memory/session.html#compact-preview", context)
    if target == "pinned-turns":
        context.update(pinned_turns=reads.pinned_turns(session))
        return render(request, "memory/session.html#pinned-turns", context)
    if target == "summary-bullets":
        context.update(bullets=reads.summary_bullets(session))
        return render(request, "memory/session.html#summary-bullets", context)
    context.update(tiers=reads.tiers(session), **_tab_context(session, tab, request))
    if target == "memory-tabs":
        return render(request, "memory/session.html#memory-tabs", context)
    context.update(
        timeline=reads.generation_timeline(session),
        jobs=Job.objects.filter(session=session, kind="reembed").unfinished().order_by("-created_at")[:1],
        **_recall_context(request, session),
    )
    return render(request, "memory/session.html", context)


@require_GET
@login_required
def bullet_turns(request: UserRequest, sid: str, bullet_id: int) -> HttpResponse:
    session = session_for(request, sid)
    bullet = get_object_or_404(Bullet.objects.filter(session=session), pk=bullet_id)
    context = {"session": session, "bullet": bullet, "cited": reads.cited_turns(session, bullet)}
    if request.htmx:
        return render(request, "memory/bullet.html#cited", context)
    return render(request, "memory/bullet.html", context)


def _back(request: UserRequest, session: Session) -> str:
    """Where a plain form goes back to: the page it was sent from (its `next`), if on this site."""
    back = request.POST.get("next", "")
    if back.startswith("/") and url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return back
    return reverse("session", args=[session.sid])


@require_POST
@login_required
def pin_turn(request: UserRequest, sid: str, position: int) -> HttpResponse:
    """Pin (`pinned=1`) or unpin (`pinned=0`) the history turn at `position`, through the one
    service. htmx gets the turn's toggle, swapped out of band into every copy of it on the page
    (a turn may be shown in its tier, among the pinned turns and in a recall hit); a plain form
    goes back to the page it came from. A pin past the session's cap writes nothing and says why."""
    session = session_for(request, sid)
    pinned = PIN_VALUES.get(request.POST.get("pinned", ""))
    if pinned is None:
        return HttpResponseBadRequest("pinned must be 1 (pin) or 0 (unpin)", content_type="text/plain")
    back = _back(request, session)
    context: dict[str, Any] = {"session": session, "position": position, "back": back, "oob": True}
    try:
        item = services.set_pinned(session=session, position=position, pinned=pinned)
    except NotFound as exc:
        raise Http404(exc.detail) from exc
    except TooManyPins as exc:
        if request.htmx:
            context.update(pinned=False, pin_error=exc.detail)
            return render(request, "components/_pin.html", context, status=422)
        messages.error(request, f"Turn #{position} was not pinned: {exc.detail}")
        return redirect(back)
    if request.htmx:
        context.update(pinned=item.pinned)
        return changed(render(request, "components/_pin.html", context))
    messages.success(
        request,
        f"Pinned turn #{position}: it stays verbatim in the prompt view until unpinned."
        if item.pinned
        else f"Unpinned turn #{position}.",
    )
    return redirect(back)


@require_POST
@login_required
def compact(request: UserRequest, sid: str) -> HttpResponse:
    """Compact now (X and Y into a new generation, in this request) or, with `background`, run the
    compaction Y's overflow is due as a job whose progress the page polls."""
    session = session_for(request, sid)
    if request.POST.get("background"):
        job = services.enqueue_compaction(session=session)
        if request.htmx:
            return render(request, "memory/_job.html", {"job": job, "session": session})
        return redirect("job", job_id=job.id)
    result = services.memory_action(session=session, action="compact")
    if result.get("job_id"):  # larger than a request should compact: the worker's, and the page follows it
        job = Job.objects.get(pk=result["job_id"])
        if request.htmx:
            return render(request, "memory/_job.html", {"job": job, "session": session})
        return redirect("job", job_id=job.id)
    removed = result["removed"]
    note = (
        f"Compacted: {removed} turn{'s' if removed != 1 else ''} archived and summarised."
        if removed
        else "Nothing to compact: X and Y hold no raw turns."
    )
    if request.htmx:
        session = session_for(request, sid)
        context = {"session": session, "tiers": reads.tiers(session), "note": note}
        context.update(_compact_context(session))
        return changed(render(request, "memory/session.html#compact-preview", context))
    messages.success(request, note)
    return redirect(reverse("session", args=[session.sid]) + "?tab=compact")


@require_POST
@login_required
def reset(request: UserRequest, sid: str) -> HttpResponse:
    session = session_for(request, sid)
    form = ResetForm(request.POST)
    if not form.is_valid():
        if not request.htmx:
            messages.error(request, "Choose what to reset: keep the summary, or wipe everything.")
            return redirect(reverse("session", args=[session.sid]) + "?tab=reset")
        context = {"session": session, "tab": "reset", "tiers": reads.tiers(session)}
        context.update(reset_form=form, reset_mode=None)
        return render(request, "memory/session.html#memory-tabs", context, status=422)
    mode = form.cleaned_data["mode"]
    services.memory_action(session=session, action="reset", mode=mode)
    note = (
        "Reset: the conversation was cleared; the rolling summary was kept with the turns it cites."
        if mode == "summary"
        else "Reset: every turn and the whole summary were deleted."
    )
    if request.htmx:
        session = session_for(request, sid)
        context = {"session": session, "tab": "reset", "tiers": reads.tiers(session), "note": note}
        context.update(reset_form=ResetForm(), reset_mode=None)
        return changed(render(request, "memory/session.html#memory-tabs", context))
    messages.success(request, note)
    return redirect(reverse("session", args=[session.sid]) + "?tab=reset")


@require_GET
@login_required
def export(request: UserRequest, sid: str) -> HttpResponse:
    session = session_for(request, sid)
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
def reembed(request: UserRequest, sid: str) -> HttpResponse:
    session = session_for(request, sid)
    try:
        job = services.enqueue_reembed(session=session)
    except TooManyJobs as exc:
        response = HttpResponse(exc.detail, status=429, content_type="text/plain")
        response["Retry-After"] = str(exc.retry_after)
        return response
    if request.htmx:
        return render(request, "memory/_job.html", {"job": job, "session": session})
    return redirect("job", job_id=job.id)


@require_http_methods(["GET", "POST"])
@login_required
def delete(request: UserRequest, sid: str) -> HttpResponse:
    """GET asks for confirmation (saying what goes); POST deletes and returns to the list."""
    session = session_for(request, sid)
    if request.method == "POST":
        services.delete_session(session=session)
        messages.success(request, f"Deleted session {sid} and everything in it.")
        return redirect("home")
    return render(request, "memory/delete.html", {"session": session, "tiers": reads.tiers(session)})
