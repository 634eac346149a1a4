"""The scoped-memory REST API (../shared/API.md, "Scoped memory"): remember and recall.

No field names a user: the user part of every address is the token's user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import Field

from . import scoped
from .schemas import ErrorOut, StrictIn

router = Router(tags=["scoped memory"])

ERRORS = {400: ErrorOut, 401: ErrorOut, 413: ErrorOut, 422: ErrorOut, 503: ErrorOut}
ModeName = Literal["app", "conversation"]


class ScopeIn(StrictIn):
    appName: str | None = None  # noqa: N815 (the contract's field names)
    domain: str | None = None
    conversationId: str | None = None  # noqa: N815


class RememberIn(ScopeIn):
    content: str
    key: str | None = None


# Named apart from memory.schemas.RecallIn/RecallOut: OpenAPI components are keyed by class name,
# and two classes of one name make one of the two operations document the other's shape.
class ScopedRecallIn(ScopeIn):
    # Required, but checked by the service: ottoweb/api.py's error handler drops a field named
    # "query" from the location it reports (it reads it as the query-string source).
    query: str | None = None
    limit: int = Field(5, ge=1, le=scoped.MAX_RECALL)


class RememberOut(Schema):
    ok: bool
    mode: ModeName
    projectKey: str  # noqa: N815
    id: int
    upserted: bool


class NoteOut(Schema):
    id: int
    key: str | None
    content: str
    score: float | None
    updated_at: datetime


class ScopedRecallOut(Schema):
    ok: bool
    mode: ModeName
    projectKey: str  # noqa: N815
    returned: int
    items: list[NoteOut]
    note: str | None = None
    degraded: bool | None = None


@router.post("/remember", response={200: RememberOut, **ERRORS})
def scoped_remember(request: HttpRequest, body: RememberIn):
    done = scoped.remember_note(
        user=request.auth.user,  # type: ignore[attr-defined]
        content=body.content,
        key=body.key,
        app_name=body.appName,
        domain=body.domain,
        conversation_id=body.conversationId,
    )
    return {
        "ok": True,
        "mode": done.scope.mode,
        "projectKey": done.scope.project_key,
        "id": done.note.pk,
        "upserted": done.upserted,
    }


# exclude_unset: "degraded" appears only when search was unavailable, so a miss never carries it.
@router.post("/recall", response={200: ScopedRecallOut, **ERRORS}, exclude_unset=True)
def scoped_recall(request: HttpRequest, body: ScopedRecallIn):
    found = scoped.recall_notes(
        user=request.auth.user,  # type: ignore[attr-defined]
        query=body.query,
        app_name=body.appName,
        domain=body.domain,
        conversation_id=body.conversationId,
        limit=body.limit,
    )
    answer: dict[str, object] = {
        "ok": True,
        "mode": found.scope.mode,
        "projectKey": found.scope.project_key,
        "returned": len(found.notes),
        "items": [
            {
                "id": n.note.pk,
                "key": n.note.key,
                "content": n.note.content,
                "score": n.score,
                "updated_at": n.note.updated_at,
            }
            for n in found.notes
        ],
    }
    if found.note is not None:
        answer["note"] = found.note
    if found.degraded:
        answer["degraded"] = True
    return answer
