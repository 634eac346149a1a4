"""Compaction: a session's tiered queue with the configured summariser, and compacting it now."""

from __future__ import annotations

import logging
from functools import lru_cache

from django.conf import settings
from django.db import transaction

from .. import providers
from ..engine.compaction import Summarizer
from ..engine.queue import Compacted, TieredQueue
from ..models import Session
from ..storage import DjangoTierStore

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def summarizer_for(spec: str) -> Summarizer:
    """The summariser named by OTTO_SUMMARIZER (docs/decisions.md, foundation 4)."""
    return providers.summarizer(spec)


def queue_for(session: Session, kind: str = "history", *, summarize: Summarizer | None = None) -> TieredQueue:
    return TieredQueue(
        DjangoTierStore(session),
        kind=kind,
        x_budget=session.x_budget,
        y_budget=session.y_budget,
        summarize=summarize or summarizer_for(settings.OTTO_SUMMARIZER),
        protected_share=session.protected_share
        if session.protected_share is not None
        else settings.OTTO_PROTECTED_SHARE,
    )


def compact_session(
    *,
    session: Session,
    kind: str = "history",
    force: bool = False,
    include_x: bool = False,
    queue: TieredQueue | None = None,
) -> Compacted | None:
    """Compact one kind of the session now: raw Y items archived, Y replaced by cited bullets."""
    with transaction.atomic():
        queue = queue or queue_for(session, kind)
        compacted = queue.compact(force=force, include_x=include_x)
        if compacted is not None and compacted.result.summarizer_error:
            log.warning("session %s: %s", session.sid, compacted.result.summarizer_error)
        return compacted
