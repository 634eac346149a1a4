"""The engine's TierStore on the ORM, for one session. Callers hold the transaction."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q, Sum
from django.db.models.functions import Coalesce

from .engine.types import Bullet, Draft, Item, Tier, TierTotals
from .models import TIER_ARCHIVED, TIER_X, TIER_Y, Chunk, Session, TierState
from .models import Bullet as BulletRow
from .models import Item as ItemRow


def item_from_row(row: ItemRow) -> Item:
    return Item(
        position=row.position,
        role=row.role,
        text=row.chunk.text,
        hash=row.chunk.hash,
        tokens=row.tokens,
        protected=row.protected,
        meta=row.meta,
    )


def bullet_from_row(row: BulletRow) -> Bullet:
    return Bullet(
        text=row.text,
        hash_refs=tuple(row.hash_refs),
        generation=row.generation,
        tokens=row.tokens,
        first_position=row.first_position,
        protected=row.protected,
        role=row.role or None,
    )


class DjangoTierStore:
    """Implements `memory.engine.types.TierStore` for `session`."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def _state(self, kind: str, *, lock: bool = False) -> TierState:
        rows = TierState.objects.filter(session=self.session, kind=kind)
        if lock:
            rows = rows.select_for_update()
        state = rows.first()
        if state is None:
            state, _ = TierState.objects.get_or_create(session=self.session, kind=kind)
        return state

    def totals(self, kind: str) -> TierTotals:
        pending = (
            ItemRow.objects.of_kind(self.session, kind)
            .pending()
            .aggregate(
                x=Coalesce(Sum("tokens", filter=Q(tier=TIER_X)), 0),
                y=Coalesce(Sum("tokens", filter=Q(tier=TIER_Y)), 0),
            )
        )
        bullets = (
            BulletRow.objects.of_kind(self.session, kind)
            .live()
            .aggregate(
                all=Coalesce(Sum("tokens"), 0),
                protected=Coalesce(Sum("tokens", filter=Q(protected=True)), 0),
            )
        )
        return TierTotals(
            x=pending["x"],
            y_raw=pending["y"],
            bullets=bullets["all"],
            protected=bullets["protected"],
            generation=self._state(kind).generation,
        )

    def chunk_for(self, draft: Draft) -> Chunk:
        chunk = Chunk.objects.filter(session=self.session, hash=draft.hash).first()
        if chunk is None:
            chunk = Chunk.objects.create(
                session=self.session, hash=draft.hash, text=draft.text, tokens=draft.tokens
            )
        return chunk

    def _place(self, kind: str, draft: Draft, tier: str) -> Item:
        state = self._state(kind, lock=True)
        position = state.next_position
        TierState.objects.filter(pk=state.pk).update(next_position=position + 1)
        ItemRow.objects.create(
            session=self.session,
            kind=kind,
            position=position,
            chunk=self.chunk_for(draft),
            role=draft.role,
            tier=tier,
            protected=draft.protected,
            tokens=draft.tokens,
            meta=dict(draft.meta),
        )
        return Item(
            position=position,
            role=draft.role,
            text=draft.text,
            hash=draft.hash,
            tokens=draft.tokens,
            protected=draft.protected,
            meta=dict(draft.meta),
        )

    def add_to_x(self, kind: str, draft: Draft) -> Item:
        return self._place(kind, draft, TIER_X)

    def archive(self, kind: str, draft: Draft) -> Item:
        return self._place(kind, draft, TIER_ARCHIVED)

    def move_x_to_y(self, kind: str) -> None:
        ItemRow.objects.of_kind(self.session, kind).in_tier(TIER_X).update(tier=TIER_Y)

    def items(self, kind: str, tier: Tier) -> list[Item]:
        rows = (
            ItemRow.objects.of_kind(self.session, kind)
            .in_tier(TIER_X if tier == "x" else TIER_Y)
            .select_related("chunk")
            .order_by("position")
        )
        return [item_from_row(row) for row in rows]

    def live_bullets(self, kind: str) -> list[Bullet]:
        rows = BulletRow.objects.of_kind(self.session, kind).live().order_by("first_position", "id")
        return [bullet_from_row(row) for row in rows]

    def commit_compaction(
        self,
        kind: str,
        *,
        base_generation: int,
        archived_positions: Sequence[int],
        bullets: Sequence[Bullet],
    ) -> bool:
        state = self._state(kind, lock=True)
        if state.generation != base_generation:
            return False
        ItemRow.objects.of_kind(self.session, kind).in_tier(TIER_Y).filter(
            position__in=list(archived_positions)
        ).update(tier=TIER_ARCHIVED)
        BulletRow.objects.of_kind(self.session, kind).live().update(superseded=True)
        BulletRow.objects.bulk_create(
            [
                BulletRow(
                    session=self.session,
                    kind=kind,
                    generation=b.generation,
                    text=b.text,
                    hash_refs=list(b.hash_refs),
                    tokens=b.tokens,
                    first_position=b.first_position,
                    protected=b.protected,
                    role=b.role or "",
                )
                for b in bullets
            ]
        )
        TierState.objects.filter(pk=state.pk).update(generation=base_generation + 1)
        return True
