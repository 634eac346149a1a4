"""Compaction: a session's tiered queue with the configured summariser, compacting it now, and the
commit that keeps the session's pins as they are when it commits."""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import transaction

from .. import providers
from ..engine.prompt import Summarizer
from ..engine.queue import Compacted, TieredQueue
from ..engine.types import Bullet
from ..models import TIER_ARCHIVED, Item, Session
from ..models import Bullet as BulletRow
from ..storage import DjangoTierStore, bullet_row, lookups
from .embedding import embed_quietly
from .jobs import enqueue_compaction

log = logging.getLogger(__name__)


@lru_cache(maxsize=4)
def summarizer_for(spec: str) -> Summarizer:
    """The summariser named by OTTO_SUMMARIZER (docs/decisions.md, foundation 4)."""
    return providers.summarizer(spec)


def queue_for(session: Session, kind: str = "history", *, summarize: Summarizer | None = None) -> TieredQueue:
    return TieredQueue(
        PinKeepingStore(session),
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


def compact_overflow(session: Session, queue: TieredQueue) -> dict[str, Any] | None:
    """The compaction a write that overflowed Y needs: handed to the worker (its job's reference)
    or run inline (None), as OTTO_COMPACTION says. The caller holds the transaction."""
    if settings.OTTO_COMPACTION == "job":
        return {"job_id": enqueue_compaction(session=session).id}
    compact_session(session=session, kind=queue.kind, queue=queue)
    transaction.on_commit(lambda: embed_quietly(session, queue.kind))
    return None


class PinKeepingStore(DjangoTierStore):
    """The session's tiers, whose compaction commit keeps the pins as they are when it commits.

    A worker plans a compaction outside the lock (a live summariser may take seconds), so a turn
    pinned or unpinned meanwhile reaches the commit as the plan saw it: a pinned turn archived into
    a summary line, the bullet a pin added superseded, an unpinned turn's bullet still pinned. Under
    the lock the commit takes, every turn the plan or the pins touched is set right again.
    """

    def commit_compaction(
        self, kind: str, *, base_generation: int, archived_positions: Sequence[int], bullets: Sequence[Bullet]
    ) -> bool:
        if kind != "history":
            return super().commit_compaction(
                kind, base_generation=base_generation, archived_positions=archived_positions, bullets=bullets
            )
        self.flush()
        lookups.tier_state(self.session.pk, kind, lock=True)
        # The turns whose pin the commit may get wrong: those pinned bullets stand for now, those it
        # archives, and those its own bullets pin.
        pins = BulletRow.objects.of_kind(self.session, kind).live().filter(pinned=True)
        touched = {h for b in pins for h in b.hash_refs}
        touched.update(
            Item.objects.of_kind(self.session, kind)
            .filter(position__in=list(archived_positions), pinned=True)
            .values_list("chunk__hash", flat=True)
        )
        touched.update(h for b in bullets if b.pinned for h in b.hash_refs)
        committed = super().commit_compaction(
            kind, base_generation=base_generation, archived_positions=archived_positions, bullets=bullets
        )
        if committed and touched:
            keep_pins_in_view(self.session, touched)
        return committed


def keep_pins_in_view(session: Session, hashes: Collection[str]) -> bool:
    """Make the live bullets of the history turns with these hashes agree with their pins: an archived
    pinned turn is held by a live bullet of its own, verbatim, protected and pinned (a live
    protected bullet of the turn is flagged, else one is added to the live generation); a bullet of
    a turn no longer pinned is not pinned (it stays protected). Says whether a bullet was added.
    The caller holds the transaction and the history tiers' lock.
    """
    pinned = {
        i.chunk.hash: i
        for i in Item.objects.of_kind(session, "history")
        .filter(pinned=True, chunk__hash__in=list(hashes))
        .select_related("chunk")
        .order_by("-position")
    }
    own: dict[str, list[BulletRow]] = {}
    for b in BulletRow.objects.of_kind(session, "history").live():
        if len(b.hash_refs) == 1 and b.hash_refs[0] in hashes:
            own.setdefault(b.hash_refs[0], []).append(b)
    added = False
    for digest in hashes:
        mine = own.get(digest, [])
        item = pinned.get(digest)
        if item is None:
            BulletRow.objects.filter(pk__in=[b.pk for b in mine if b.pinned]).update(pinned=False)
        elif item.tier == TIER_ARCHIVED and not any(b.pinned for b in mine):
            protected = [b for b in mine if b.protected]
            if protected:
                BulletRow.objects.filter(pk=protected[0].pk).update(pinned=True)
                continue
            state = lookups.tier_state(session.pk, "history")
            bullet = Bullet(
                text=item.chunk.text,
                hash_refs=(digest,),
                generation=state.generation if state is not None else 0,
                tokens=item.tokens,
                first_position=item.position,
                protected=True,
                role=item.role,
                pinned=True,
                name=item.name,
                occurred_at=item.when,
            )
            bullet_row(session, "history", bullet).save()
            added = True
    return added
