"""The scoped-memory REST API (docs/api.md, "Scoped memory"): remember and recall.

No field names a user: the user part of every address is the token's user.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ninja import Query, Router, Schema, Status
from pydantic import Field

from ottoweb.requests import ApiRequest
from ottoweb.schemas import ERRORS, CleanIn, StrictIn

from ..answers import recalled, remembered, stored_note
from ..services import notes as scoped
from ..services import scopes

router = Router(tags=["scoped memory"])

ModeName = Literal["app", "conversation"]


class ScopeIn(StrictIn):
    appName: str | None = None  # noqa: N815 (the contract's field names)
    domain: str | None = None
    conversationId: str | None = None  # noqa: N815


class RememberIn(ScopeIn):
    content: str
    key: str | None = None


# Named apart from the session recall's RecallIn/RecallOut: OpenAPI components are keyed by class name,
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
def scoped_remember(request: ApiRequest, body: RememberIn):
    return remembered(
        scoped.remember_note(
            user=request.auth.user,
            content=body.content,
            key=body.key,
            app_name=body.appName,
            domain=body.domain,
            conversation_id=body.conversationId,
        )
    )


# exclude_unset: "degraded" appears only when search was unavailable, so a miss never carries it.
@router.post("/recall", response={200: ScopedRecallOut, **ERRORS}, exclude_unset=True)
def scoped_recall(request: ApiRequest, body: ScopedRecallIn):
    return recalled(
        scoped.recall_notes(
            user=request.auth.user,
            query=body.query,
            app_name=body.appName,
            domain=body.domain,
            conversation_id=body.conversationId,
            limit=body.limit,
        )
    )


# --- notes as first-class objects -------------------------------------------------------------------


class NoteScopeQuery(CleanIn):
    appName: str | None = Field(None, max_length=scopes.MAX_APP_CHARS)  # noqa: N815
    domain: str | None = Field(None, max_length=253)
    conversationId: str | None = Field(None, max_length=scopes.MAX_CONVERSATION_CHARS)  # noqa: N815


class NoteListQuery(NoteScopeQuery):
    limit: int = Field(20, ge=1, le=scoped.MAX_PAGE)
    offset: int = Field(0, ge=0, le=1_000_000_000)


class StoredNoteOut(Schema):
    id: int
    mode: ModeName
    projectKey: str  # noqa: N815
    key: str | None
    content: str
    created_at: datetime
    updated_at: datetime


class NoteListOut(Schema):
    items: list[StoredNoteOut]
    count: int


class ScopeOut(Schema):
    mode: ModeName
    projectKey: str  # noqa: N815
    notes: int
    updated_at: datetime


class ScopeListOut(Schema):
    items: list[ScopeOut]


class DeletedScopeOut(Schema):
    mode: ModeName
    projectKey: str  # noqa: N815
    deleted: int


@router.get("/notes", response={200: NoteListOut, **ERRORS})
def list_notes(request: ApiRequest, params: Query[NoteListQuery]):
    """The caller's notes, newest first: of one scope when one is named, else of every scope."""
    rows, count = scoped.list_notes(
        user=request.auth.user,
        app_name=params.appName,
        domain=params.domain,
        conversation_id=params.conversationId,
        limit=params.limit,
        offset=params.offset,
    )
    return {"items": [stored_note(n) for n in rows], "count": count}


@router.get("/scopes", response={200: ScopeListOut, **ERRORS})
def list_scopes(request: ApiRequest):
    """Every scope the caller has notes in, most recently changed first."""
    rows = scoped.scopes_of(user=request.auth.user)
    return {
        "items": [
            {
                "mode": r["mode"],
                "projectKey": r["project_key"],
                "notes": r["notes"],
                "updated_at": r["updated_at"],
            }
            for r in rows
        ]
    }


@router.get("/notes/{note_id}", response={200: StoredNoteOut, **ERRORS})
def read_note(request: ApiRequest, note_id: int):
    return stored_note(scoped.get_note(user=request.auth.user, note_id=note_id))


@router.delete("/notes/{note_id}", response={204: None, **ERRORS})
def delete_note(request: ApiRequest, note_id: int):
    scoped.delete_note(note=scoped.get_note(user=request.auth.user, note_id=note_id))
    return Status(204, None)


@router.delete("/notes", response={200: DeletedScopeOut, **ERRORS})
def delete_scope(request: ApiRequest, params: Query[NoteScopeQuery]):
    """Delete every note of the named scope (a scope must be named: nothing deletes every note)."""
    scope, deleted = scoped.delete_scope(
        user=request.auth.user,
        app_name=params.appName,
        domain=params.domain,
        conversation_id=params.conversationId,
    )
    return {"mode": scope.mode, "projectKey": scope.project_key, "deleted": deleted}
