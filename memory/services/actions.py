"""The manual memory actions (docs/decisions.md): compact now, rebuild the summary, reset."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from ottoweb.errors import Invalid

from ..models import Bullet, Session
from ..storage import DjangoTierStore
from .compaction import compact_session, queue_for
from .embedding import embed_quietly, schedule_embedding
from .jobs import enqueue_compaction
from .sessions import reset_session


def memory_action(*, session: Session, action: str, mode: str | None = None) -> dict[str, Any]:
    """compact → {"removed"}, summary → {"count"}, reset (mode summary|all) → {"reset"}."""
    if mode is not None and action != "reset":
        # Refused like an unknown field: `{"action": "compact", "mode": "all"}` most likely meant
        # a reset, and would otherwise compact and answer as if it had done what was asked.
        raise Invalid(f"mode is reset's alone: {action} takes no mode", field="mode")
    if action == "compact":
        if settings.OTTO_COMPACTION == "job" and _raw_tokens(session) > settings.OTTO_INLINE_COMPACT_TOKENS:
            # Its cost grows with X + Y (and a live summariser's wait with it): past the bound it is
            # the worker's, and the request only queues it.
            job = enqueue_compaction(session=session, everything=True)
            return {"removed": 0, "job_id": job.id}
        compacted = compact_session(session=session, force=True, include_x=True)
        if settings.OTTO_COMPACTION == "job":
            schedule_embedding(session, "history")  # the worker's, as after any append
        else:
            transaction.on_commit(lambda: embed_quietly(session, "history"))
        return {"removed": compacted.removed if compacted else 0}
    if action == "summary":
        return {"count": rebuild_summary(session=session)}
    if action == "reset":
        if mode not in ("summary", "all"):
            raise Invalid("reset needs mode 'summary' (keep the rolling summary) or 'all'", field="mode")
        reset_session(session=session, mode=mode)
        return {"reset": mode}
    raise Invalid("action must be compact, summary or reset", field="action")


def _raw_tokens(session: Session) -> int:
    """Tokens of the history turns in X and Y: what a manual compact would summarise."""
    totals = DjangoTierStore(session).totals("history")
    return totals.x + totals.y_raw


def rebuild_summary(*, session: Session) -> int:
    """Re-summarise the live bullets into a new generation; raw tiers untouched; no hash ref lost."""
    with transaction.atomic():
        queue = queue_for(session, "history")
        plan = queue.plan(force=True, raw=False)
        if plan is not None:
            queue.commit(plan)
        return Bullet.objects.of_kind(session, "history").live().count()
