"""`DjangoTierStore`: the engine's TierStore (`memory.engine.types`) on the ORM, for the
`TieredQueue` of one session.

Callers hold the transaction. Every item is indexed for keyword search in the transaction that
stores it (`fts.fts_index_many`); vectors are written later, off the append path (`memory/recall.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from django.db import connection, transaction
from django.utils import timezone

from ..engine.retrieval import Said, index_context
from ..engine.types import Bullet, Draft, Item, Tier, TierTotals
from ..models import TIER_ARCHIVED, TIER_X, TIER_Y, Chunk, Session, TierState, offset_minutes
from ..models import Bullet as BulletRow
from ..models import Item as ItemRow
from . import lookups
from .fts import fts_index_many
from .rows import bullet_from_row, bullet_row, item_from_row, said_of


class DjangoTierStore:
    """Implements `memory.engine.types.TierStore` for `session`."""

    def __init__(self, session: Session) -> None:
        self.session = session
        # Inside one transaction, once a kind's state row is locked, nobody else can change its
        # tiers: its state, totals and last placed row are kept here instead of read again for
        # every item of a batch (three aggregates and two lookups an item, most of a batch's time).
        self._locked: dict[str, TierState] = {}
        self._totals: dict[str, TierTotals] = {}
        self._last: dict[str, tuple[ItemRow, str]] = {}
        # Inside `batched()`: items placed but not yet written, written together by `flush()`.
        self._batching = False
        self._pending: list[tuple[ItemRow, Draft]] = []

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Write the items placed inside the block together, when it ends (or before anything reads
        the tiers back). A batch of 1,000 turns is then a few statements instead of five an item,
        which keeps the one write lock it holds short. The caller holds the transaction."""
        self._batching = True
        try:
            yield
            self.flush()
        finally:
            self._batching = False
            self._pending.clear()

    def flush(self) -> None:
        """Write the pending items: their chunks, rows, keyword index entries and tier positions."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        self.write_items(pending)
        for kind in {row.kind for row, _ in pending}:
            state = self._locked[kind]
            TierState.objects.filter(pk=state.pk).update(next_position=state.next_position)

    def write_items(self, pending: Sequence[tuple[ItemRow, Draft]]) -> None:
        """Write item rows, in position order, with the chunks the session lacks and their keyword
        index entries: a few statements for the lot. Positions are the caller's (`flush`, an
        import); the caller holds the transaction."""
        drafts = {draft.hash: draft for _, draft in pending}
        hashes = list(drafts)
        chunks = lookups.chunk_ids(self.session.pk, hashes)
        new = [
            Chunk(session=self.session, hash=h, text=d.text, tokens=d.tokens)
            for h, d in drafts.items()
            if h not in chunks
        ]
        for chunk in Chunk.objects.bulk_create(new, batch_size=500):
            chunks[chunk.hash] = chunk.pk
        for row, draft in pending:
            row.chunk_id = chunks[draft.hash]
        ItemRow.objects.bulk_create([row for row, _ in pending], batch_size=500)
        entries = []
        for row, draft in pending:
            entries.append(self._index_entry(row, draft.text))
            self._last[row.kind] = (row, draft.text)
        fts_index_many(entries)

    def _forget(self, kind: str | None = None) -> None:
        for held in (self._locked, self._totals, self._last):
            if kind is None:
                held.clear()
            else:
                held.pop(kind, None)

    def _state(self, kind: str, *, lock: bool = False) -> TierState:
        if kind in self._locked:
            return self._locked[kind]
        state = lookups.tier_state(self.session.pk, kind, lock=lock)
        if state is None:
            state, _ = TierState.objects.get_or_create(session=self.session, kind=kind)
        if lock and connection.in_atomic_block:
            if not any((self._locked, self._totals, self._last)):
                # The lock ends with the transaction, and so does what was kept under it.
                transaction.on_commit(self._forget)
            self._forget(kind)
            self._locked[kind] = state
        return state

    def totals(self, kind: str) -> TierTotals:
        if kind in self._totals:
            return self._totals[kind]
        self.flush()
        # Every append reads these: one plain-SQL round trip of index range sums, where the ORM spent
        # more time building its three queries than the database spent answering them.
        pk = self.session.pk
        params: list[int | str | bool] = [pk, kind, TIER_X, pk, kind, TIER_Y, pk, kind, False]
        params += [pk, kind, False, True, pk, kind]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT "
                "(SELECT COALESCE(SUM(tokens), 0) FROM memory_item WHERE session_id = %s AND kind = %s AND tier = %s), "
                "(SELECT COALESCE(SUM(tokens), 0) FROM memory_item WHERE session_id = %s AND kind = %s AND tier = %s), "
                "(SELECT COALESCE(SUM(tokens), 0) FROM memory_bullet "
                " WHERE session_id = %s AND kind = %s AND superseded = %s), "
                "(SELECT COALESCE(SUM(tokens), 0) FROM memory_bullet "
                " WHERE session_id = %s AND kind = %s AND superseded = %s AND protected = %s), "
                "(SELECT generation FROM memory_tierstate WHERE session_id = %s AND kind = %s)",
                params,
            )
            x, y_raw, bullets, protected, generation = cursor.fetchone()
        if generation is None:
            generation = self._state(kind).generation
        totals = TierTotals(
            x=int(x), y_raw=int(y_raw), bullets=int(bullets), protected=int(protected), generation=generation
        )
        if kind in self._locked:
            self._totals[kind] = totals
        return totals

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
        buffered = self._batching and kind in self._locked
        if not buffered:
            TierState.objects.filter(pk=state.pk).update(next_position=position + 1)
        state.next_position = position + 1
        when = draft.occurred_at or timezone.now()
        row = ItemRow(
            session=self.session,
            kind=kind,
            position=position,
            role=draft.role,
            tier=tier,
            protected=draft.protected,
            pinned=draft.pinned,
            tokens=draft.tokens,
            meta=dict(draft.meta),
            name=draft.name,
            occurred_at=when,
            utc_offset=offset_minutes(when),
        )
        if buffered:
            self._pending.append((row, draft))
        else:
            row.chunk = self.chunk_for(draft)
            row.save(force_insert=True)
            self.index_item(row, draft.text)
        if kind in self._locked:
            if not buffered:
                self._last[kind] = (row, draft.text)
            if kind in self._totals and tier == TIER_X:
                self._totals[kind] = replace(self._totals[kind], x=self._totals[kind].x + draft.tokens)
        return Item(
            position=position,
            role=draft.role,
            text=draft.text,
            hash=draft.hash,
            tokens=draft.tokens,
            protected=draft.protected,
            meta=dict(draft.meta),
            name=draft.name,
            occurred_at=when,
            pinned=draft.pinned,
        )

    def index_item(self, row: ItemRow, text: str) -> None:
        """Add the item to the keyword index, with the turn before it as context."""
        fts_index_many([self._index_entry(row, text)])

    def _index_entry(self, row: ItemRow, text: str) -> tuple[int, int, str, str, str]:
        last = self._last.get(row.kind)
        if last is not None and last[0].position == row.position - 1:
            before: Said | None = said_of(*last)
        else:
            previous = lookups.item_at(self.session.pk, row.kind, row.position - 1) if row.position else None
            before = said_of(*previous) if previous else None
        return (row.pk, self.session.pk, row.kind, text, index_context(said_of(row, text), before))

    def add_to_x(self, kind: str, draft: Draft) -> Item:
        return self._place(kind, draft, TIER_X)

    def archive(self, kind: str, draft: Draft) -> Item:
        return self._place(kind, draft, TIER_ARCHIVED)

    def move_x_to_y(self, kind: str) -> None:
        self.flush()
        ItemRow.objects.of_kind(self.session, kind).in_tier(TIER_X).update(tier=TIER_Y)
        held = self._totals.get(kind)
        if held is not None:
            self._totals[kind] = replace(held, x=0, y_raw=held.y_raw + held.x)

    def items(self, kind: str, tier: Tier) -> list[Item]:
        self.flush()
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
        # A compaction changes Y and the bullets wholesale: what was kept is read again after it.
        self.flush()
        self._forget(kind)
        state = self._state(kind, lock=True)
        if state.generation != base_generation:
            return False
        planned = (
            ItemRow.objects.of_kind(self.session, kind)
            .in_tier(TIER_Y)
            .filter(position__in=list(archived_positions))
        )
        if planned.count() != len(set(archived_positions)):
            # A turn of the plan was taken back meanwhile (services.pop_last_item): its bullets would
            # cite a hash nothing holds. Nothing is written; the job plans again.
            return False
        planned.update(tier=TIER_ARCHIVED)
        BulletRow.objects.of_kind(self.session, kind).live().update(superseded=True)
        BulletRow.objects.bulk_create([bullet_row(self.session, kind, b) for b in bullets])
        TierState.objects.filter(pk=state.pk).update(generation=base_generation + 1)
        self._forget(kind)
        return True
