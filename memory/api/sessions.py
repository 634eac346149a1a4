"""The memory REST API (docs/api.md): sessions, items, context."""

from __future__ import annotations

import re
from typing import Annotated

from django.conf import settings
from django.http import HttpResponse
from ninja import Query, Router, Status
from pydantic import Field, WithJsonSchema

from accounts.models import AuditEntry
from ottoweb import parsing
from ottoweb.errors import Invalid, NotFound
from ottoweb.requests import ApiRequest
from ottoweb.schemas import ERRORS as SHARED_ERRORS
from ottoweb.schemas import CleanIn, ErrorOut

from .. import services
from ..models import Item, Job, Session
from ..reads import session_context, session_summary, turn_dict
from ..recall import recall
from ..services.sessions import get_user_session, matching_sessions
from .schemas import (
    AppendOut,
    AuditListOut,
    BatchIn,
    BatchOut,
    ContextOut,
    ItemIn,
    JobOut,
    JobRef,
    MemoryActionIn,
    PinIn,
    PoppedOut,
    RecallIn,
    RecallOut,
    ReembedIn,
    SessionDetailOut,
    SessionIn,
    SessionListOut,
    SessionOut,
    TurnOut,
)

router = Router(tags=["sessions"])

# Job ids are 16 hex digits (services.jobs._new_job); the column holds at most 32 characters.
JOB_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}\Z")

# 409: an id that is taken.
ERRORS = {**SHARED_ERRORS, 409: ErrorOut}


def get_session(request: ApiRequest, sid: str, *, totals: bool = False) -> Session:
    return get_user_session(request.auth.user, sid, totals=totals)


def _summary(request: ApiRequest, sid: str) -> dict:
    return session_summary(get_session(request, sid, totals=True))


@router.post("/sessions", response={201: SessionOut, **ERRORS})
def create_session(request: ApiRequest, body: SessionIn):
    session = services.create_session(
        user=request.auth.user,
        sid=body.id,
        title=body.title,
        workspace=body.workspace,
        x_budget=body.x_budget,
        y_budget=body.y_budget,
        protected_share=body.protected_share,
    )
    return Status(201, _summary(request, session.sid))


# Before /sessions/{sid}: Django would otherwise match "import" as a session id.
@router.post("/sessions/import", response={201: SessionOut, 429: ErrorOut, **ERRORS})
def import_session(request: ApiRequest, id: str | None = None):  # noqa: A002 (the contract's name)
    """The body is a session document (GET …/export); validated whole before anything is written."""
    limit = settings.OTTO_MAX_IMPORT_BYTES
    size = int(request.META.get("CONTENT_LENGTH") or 0)
    if size > limit:
        raise Invalid(f"the document is {size:,} bytes; the limit is {limit:,}", field="$")
    # Read as a stream, not request.body: the document may be larger than other bodies
    # (OTTO_MAX_BODY_BYTES), up to the limit export shares (services.export_session_json).
    raw = request.read(limit + 1)
    if len(raw) > limit:
        raise Invalid(f"the document is over {limit:,} bytes; the limit is {limit:,}", field="$")
    try:
        document = parsing.read_json(raw)
    except parsing.NotJson as exc:
        raise Invalid(f"the document {exc}", field="$") from None
    except (parsing.TooDeep, parsing.TooLong) as exc:
        raise Invalid(str(exc), field="$") from None
    session = services.import_session(user=request.auth.user, document=document, sid=id)
    return Status(201, _summary(request, session.sid))


class ListParams(CleanIn):
    q: str = Field("", max_length=200)
    limit: int = Field(50, ge=1, le=500)
    # Bounded: an OFFSET past 2**63 overflows SQLite's integer (a 500 before this bound).
    offset: int = Field(0, ge=0, le=1_000_000_000)


@router.get("/sessions", response={200: SessionListOut, **ERRORS})
def list_sessions(request: ApiRequest, params: Query[ListParams]):
    rows = matching_sessions(request.auth.user, params.q)
    page = rows.with_totals().order_by("-updated_at", "-id")[params.offset : params.offset + params.limit]
    return {"items": [session_summary(s) for s in page], "count": rows.count()}


@router.get("/sessions/{sid}", response={200: SessionDetailOut, **ERRORS}, summary="Get Session")
def get_session_view(request: ApiRequest, sid: str):
    session = get_session(request, sid, totals=True)
    return {
        **session_summary(session),
        "unembedded": Item.objects.filter(session=session, vector=None).count(),
    }


@router.delete("/sessions/{sid}", response={204: None, **ERRORS})
def delete_session(request: ApiRequest, sid: str):
    services.delete_session(session=get_session(request, sid))
    return Status(204, None)


def new_items(items: list[ItemIn]) -> list[services.NewItem]:
    return [
        services.NewItem(
            role=i.role,
            text=i.text,
            kind=i.kind,
            protected=i.protected,
            name=i.name,
            occurred_at=i.occurred_at,
            meta=i.meta,
            pinned=i.pinned,
        )
        for i in items
    ]


def _append(request: ApiRequest, sid: str, items: list[ItemIn], *, batch: bool = False) -> list[dict]:
    session = get_session(request, sid)
    new = new_items(items)
    if batch:
        services.check_batch(new)
    outcomes = services.append_items(session=session, items=new)
    return [
        {"hash": o.hash, "kind": o.kind, "position": o.position, "compaction": o.compaction} for o in outcomes
    ]


@router.post("/sessions/{sid}/items", response={201: AppendOut, **ERRORS})
def append_item(request: ApiRequest, sid: str, body: ItemIn):
    return Status(201, _append(request, sid, [body])[0])


@router.post("/sessions/{sid}/items/batch", response={201: BatchOut, **ERRORS})
def append_batch(request: ApiRequest, sid: str, body: BatchIn):
    return Status(201, {"items": _append(request, sid, body.items, batch=True)})


@router.post("/sessions/{sid}/items/{position}/pin", response={200: TurnOut, **ERRORS})
def pin_turn(request: ApiRequest, sid: str, position: int, body: PinIn):
    """`{"pinned": true}` keeps the history turn at `position` verbatim in the view until
    `{"pinned": false}`; the answer is the turn. 404: no such turn; 409 too_many_pins: past the
    session's cap (OTTO_MAX_PINS turns, or its protected share of Y in tokens)."""
    item = services.set_pinned(session=get_session(request, sid), position=position, pinned=body.pinned)
    return turn_dict(item)


@router.post("/sessions/{sid}/items/pop", response={200: PoppedOut, **ERRORS})
def pop_turn(request: ApiRequest, sid: str):
    """Remove the newest history turn, as if it had never been appended (its position is the next
    one again; export and import stay whole), and answer it; `{"item": null}` when the session
    holds no turn. 409 conflict: that turn has been compacted into the summary, so it stays."""
    item = services.pop_last_item(session=get_session(request, sid))
    return {"item": None if item is None else turn_dict(item)}


@router.get("/sessions/{sid}/context", response={200: ContextOut, **ERRORS})
def get_context(
    request: ApiRequest,
    sid: str,
    # The one kind a view is of; documented as such (an enum of one), refused below with why.
    kind: Annotated[str, WithJsonSchema({"type": "string", "enum": ["history"]})] = "history",
):
    session = get_session(request, sid)
    if kind != "history" and kind != "context":
        raise Invalid(f"kind must be history, not {kind!r}", field="kind")
    if kind == "context":
        # A context item is archived as it is appended (engine/queue.py) and never enters a view:
        # a view of them would always be empty, as if the session held no tool output.
        raise Invalid(
            "kind must be history: context items (tool output) are stored for recall and never enter "
            "the prompt view, so a view of them is always empty; find them with "
            f'POST /api/v1/sessions/{session.sid}/recall and "kind": "context" (or "all")',
            field="kind",
        )
    return session_context(session, kind)


@router.post("/sessions/{sid}/recall", response={200: RecallOut, **ERRORS}, summary="Recall")
def recall_view(request: ApiRequest, sid: str, body: RecallIn):
    # rules_off: null is none switched off.
    return recall(get_session(request, sid), **body.model_dump(exclude_none=True))


@router.post("/sessions/{sid}/memory", response={200: dict, **ERRORS})
def memory_action(request: ApiRequest, sid: str, body: MemoryActionIn):
    """compact → {"removed"}; summary → {"count"}; reset (mode summary|all) → {"reset"}."""
    return services.memory_action(session=get_session(request, sid), action=body.action, mode=body.mode)


@router.get("/sessions/{sid}/export", response={200: dict, **ERRORS})
def export_session(request: ApiRequest, sid: str):
    """The session document; 413 when it is larger than an import accepts (OTTO_MAX_IMPORT_BYTES)."""
    data = services.export_session_json(get_session(request, sid))
    return HttpResponse(data, content_type="application/json; charset=utf-8")


@router.post("/sessions/{sid}/reembed", response={202: JobRef, 429: ErrorOut, **ERRORS})
def reembed(request: ApiRequest, sid: str, body: ReembedIn | None = None):
    job = services.enqueue_reembed(session=get_session(request, sid), model=body.model if body else None)
    return Status(202, {"job_id": job.id})


@router.get("/jobs/{job_id}", response={200: JobOut, **ERRORS})
def get_job(request: ApiRequest, job_id: str):
    if not JOB_ID.match(job_id):
        raise NotFound("no job with that id")
    job = Job.objects.for_user(request.auth.user).select_related("session").filter(pk=job_id).first()
    if job is None:
        raise NotFound(f"no job {job_id!r}")
    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status,
        "progress": job.progress,
        "total": job.total,
        "error": job.error,
        "session": job.session.sid if job.session else None,
    }


class AuditParams(CleanIn):
    session: str = Field("", max_length=128)
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0, le=1_000_000_000)


@router.get("/audit", response={200: AuditListOut, **ERRORS}, tags=["audit"])
def audit_trail(request: ApiRequest, params: Query[AuditParams]):
    """The caller's audit trail (every state-changing call), newest first; `session` narrows it."""
    rows = AuditEntry.objects.for_user(request.auth.user, params.session)
    page = rows.order_by("-created_at", "-id")[params.offset : params.offset + params.limit]
    return {
        "items": [
            {
                "id": e.id,
                "created_at": e.created_at,
                "channel": e.channel,
                "method": e.method,
                "path": e.path,
                "action": e.action,
                "object": e.object_ref,
                "session": e.session_sid,
                "status": e.status,
                "outcome": e.outcome,
                "token": e.token_prefix,
            }
            for e in page
        ],
        "count": rows.count(),
    }
