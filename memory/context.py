"""Read models shared by the API and the dashboard: a session's summary and its live context."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from .engine.queue import render_view
from .engine.types import View
from .models import TIER_X, TIER_Y, Bullet, Item, Session
from .storage import bullet_from_row, item_from_row


def turn_dict(row: Item) -> dict[str, Any]:
    return {
        "hash": row.chunk.hash,
        "role": row.role,
        "name": row.name,
        "occurred_at": row.when,
        "meta": row.meta,
        "text": row.chunk.text,
        "position": row.position,
    }


def bullet_dict(row: Bullet) -> dict[str, Any]:
    return {
        "id": row.pk,
        "text": row.text,
        "hash_refs": list(row.hash_refs),
        "generation": row.generation,
        "protected": row.protected,
        "quote": not row.protected and row.role == "user",
    }


def session_context(session: Session, kind: str = "history") -> dict[str, Any]:
    """The live tiers of one kind as the API's context document: bullets, Y raw, X, tokens, text."""
    bullets = list(Bullet.objects.of_kind(session, kind).live().order_by("first_position", "id"))
    pending = list(Item.objects.of_kind(session, kind).pending().select_related("chunk").order_by("position"))
    y_raw = [row for row in pending if row.tier == TIER_Y]
    x = [row for row in pending if row.tier == TIER_X]
    y_raw, held = _within_y(y_raw, room=session.y_budget - sum(b.tokens for b in bullets))
    tokens = {
        "bullets": sum(b.tokens for b in bullets),
        "y_raw": sum(r.tokens for r in y_raw),
        "x": sum(r.tokens for r in x),
        "protected": sum(b.tokens for b in bullets if b.protected),
        "held_back": sum(r.tokens for r in held),
    }
    tokens["total"] = tokens["bullets"] + tokens["y_raw"] + tokens["x"]
    view = View(
        bullets=[bullet_from_row(b) for b in bullets],
        y_raw=[item_from_row(r) for r in y_raw],
        x=[item_from_row(r) for r in x],
    )
    return {
        "kind": kind,
        "bullets": [bullet_dict(b) for b in bullets],
        "y_raw": [turn_dict(r) for r in y_raw],
        "x": [turn_dict(r) for r in x],
        "tokens": tokens,
        "held_back": len(held),
        "budgets": {"x": session.x_budget, "y": session.y_budget},
        # Y over budget between an append and its compaction (a job not run yet, or a protected share
        # of 1 with one huge turn); the context says so.
        "over_budget": tokens["bullets"] + tokens["y_raw"] > session.y_budget,
        "text": render_view(view),
    }


def _within_y(y_raw: list[Item], *, room: int) -> tuple[list[Item], list[Item]]:
    """Y's raw turns that fit in `room` (the newest), and the older ones held back.

    Between the append that overflows Y and the compaction that shrinks it (a job the worker has
    not run yet, or a worker that is down), Y's raw turns would make the prompt view outgrow its
    budget. The oldest are held back instead: nothing is lost — they are stored, recall finds them,
    and the compaction turns them into bullets — and the view stays within X + Y.
    """
    kept: list[Item] = []
    spent = 0
    for row in reversed(y_raw):
        if spent + row.tokens > room:
            break
        kept.append(row)
        spent += row.tokens
    kept.reverse()
    return kept, y_raw[: len(y_raw) - len(kept)]


def session_summary(session: Session) -> dict[str, Any]:
    """The API's session document; `session` comes from `Session.objects.with_totals()`."""
    return {
        "id": session.sid,
        "title": session.title,
        "workspace": session.workspace,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "turns": session.turns,
        "x_budget": session.x_budget,
        "y_budget": session.y_budget,
        "generation": session.generation,
        "tokens": {"x": session.x_tokens, "y_raw": session.y_raw_tokens, "bullets": session.bullet_tokens},
        "embedding_model": session.embedding_model,
        "protected_share": protected_share_of(session),
    }


def protected_share_of(session: Session) -> float:
    """The share of Y the session's verbatim protected turns may fill."""
    return session.protected_share if session.protected_share is not None else settings.OTTO_PROTECTED_SHARE
