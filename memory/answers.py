"""The answers the REST API and the MCP tools give alike, built in one place: recall's shape (a
pydantic model both validate a recall through: it drops what the contract does not name and fills
its defaults), and scoped notes as dicts, in the contract's words (`projectKey`).

The REST API documents these shapes (memory/api/); the MCP tools answer the same JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema

from .models import ScopedMemory
from .services import notes as scoped


class TurnOut(Schema):
    hash: str
    role: str
    name: str
    occurred_at: datetime
    meta: dict[str, Any]
    text: str
    position: int
    pinned: bool


class BulletOut(Schema):
    id: int
    text: str
    hash_refs: list[str]
    generation: int
    protected: bool
    # A pinned turn, kept verbatim until it is unpinned.
    pinned: bool
    # The person's earlier words that left the view: an excerpt of each turn's start, citing the
    # turns, which stay verbatim in the store (recall finds them).
    quote: bool = False


class RecallTurn(TurnOut):
    hit: bool
    truncated: bool = False


class PassageOut(Schema):
    score: float
    turns: list[RecallTurn]


class RecallResults(Schema):
    history: list[PassageOut]
    context: list[PassageOut]


class RecallOut(Schema):
    query: str
    match: str
    results: RecallResults
    bullets: list[BulletOut]
    tokens: int
    degraded: str | None


def remembered(done: scoped.Remembered) -> dict[str, object]:
    return {
        "ok": True,
        "mode": done.scope.mode,
        "projectKey": done.scope.project_key,
        "id": done.note.pk,
        "upserted": done.upserted,
    }


def recalled(found: scoped.Recalled) -> dict[str, object]:
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


def stored_note(note: ScopedMemory) -> dict[str, object]:
    return {
        "id": note.pk,
        "mode": note.mode,
        "projectKey": note.project_key,
        "key": note.key,
        "content": note.content,
        "created_at": note.created_at,
        "updated_at": note.updated_at,
    }
