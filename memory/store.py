"""The engine's TierStore on the ORM; the only SQL for sqlite-vec and FTS5, and recall's reads
and per-process caches.

Callers hold the transaction. Every item is indexed for keyword search in the transaction that
stores it; vectors are written later, off the append path (`memory/recall.py`).
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .engine import bm25, retrieval
from .engine.embeddings import Vectors, from_blob
from .engine.retrieval import Said, index_context
from .engine.types import Bullet, Draft, Item, Tier, TierTotals
from .models import TIER_ARCHIVED, TIER_X, TIER_Y, Chunk, Session, TierState, local_time, offset_minutes
from .models import Bullet as BulletRow
from .models import Item as ItemRow

T = TypeVar("T")


def item_from_row(row: ItemRow) -> Item:
    return Item(
        position=row.position,
        role=row.role,
        text=row.chunk.text,
        hash=row.chunk.hash,
        tokens=row.tokens,
        protected=row.protected,
        meta=row.meta,
        name=row.name,
        occurred_at=row.when,
    )


def said_of(row: ItemRow, text: str) -> Said:
    """The item as ranking reads it (engine/retrieval.py)."""
    return Said(text=text, role=row.role, name=row.name, occurred_at=row.when)


def moment(value: Any) -> datetime:
    """A datetime column read by raw SQL: PostgreSQL hands back an aware datetime, SQLite text."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def said_from_sql(text: str | None, role: str, name: str, occurred_at: Any, offset: int) -> Said | None:
    """A Said from a raw row's columns; None for a row that is not there (a LEFT JOIN's miss)."""
    if text is None:
        return None
    return Said(text=text, role=role, name=name or "", occurred_at=local_time(moment(occurred_at), offset))


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
        drafts = {draft.hash: draft for _, draft in pending}
        hashes = list(drafts)
        chunks: dict[str, int] = {}
        for start in range(0, len(hashes), 500):
            held = Chunk.objects.filter(session=self.session, hash__in=hashes[start : start + 500])
            chunks.update(held.values_list("hash", "id"))
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
        for row, draft in pending:
            self.index_item(row, draft.text)
            self._last[row.kind] = (row, draft.text)
        for kind in {row.kind for row, _ in pending}:
            state = self._locked[kind]
            TierState.objects.filter(pk=state.pk).update(next_position=state.next_position)

    def _forget(self, kind: str | None = None) -> None:
        for held in (self._locked, self._totals, self._last):
            if kind is None:
                held.clear()
            else:
                held.pop(kind, None)  # type: ignore[attr-defined]

    def _state(self, kind: str, *, lock: bool = False) -> TierState:
        if kind in self._locked:
            return self._locked[kind]
        rows = TierState.objects.filter(session=self.session, kind=kind)
        if lock:
            rows = rows.select_for_update()
        state = rows.first()
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
                [pk, kind, TIER_X, pk, kind, TIER_Y, pk, kind, False] + [pk, kind, False, True, pk, kind],
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
        if not buffered or not self._pending:
            # Also the first of a batch's: on SQLite a transaction that reads and then writes fails
            # at once if another writer committed in between, so the write lock is taken early.
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
        )

    def index_item(self, row: ItemRow, text: str) -> None:
        """Add the item to the keyword index, with the turn before it as context."""
        last = self._last.get(row.kind)
        if last is not None and last[0].position == row.position - 1:
            before: Said | None = said_of(*last)
        else:
            previous = (
                ItemRow.objects.of_kind(self.session, row.kind)
                .filter(position=row.position - 1)
                .select_related("chunk")
                .first()
                if row.position
                else None
            )
            before = said_of(previous, previous.chunk.text) if previous else None
        fts_index(
            row.pk,
            session_pk=self.session.pk,
            kind=row.kind,
            body=text,
            context=index_context(said_of(row, text), before),
        )

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
        self._forget(kind)
        return True


# --- recall's reads: a few hundred rows by id or position, in plain SQL (the ORM took longer to
# build each of these queries, 200 ids in an IN list, than the database took to answer it) ------


@dataclass(frozen=True, slots=True)
class Bounds:
    """Recall's `since` (inclusive) and `until` (exclusive) on when turns happened; None is open."""

    since: datetime | None = None
    until: datetime | None = None

    def __bool__(self) -> bool:
        return self.since is not None or self.until is not None

    def sql(self, alias: str = "i") -> tuple[str, list[Any]]:
        """An `AND …` clause on `alias.occurred_at`, and its parameters."""
        clause, params = "", []
        for bound, op in ((self.since, ">="), (self.until, "<")):
            if bound is not None:
                clause += f" AND {alias}.occurred_at {op} %s"
                params.append(connection.ops.adapt_datetimefield_value(bound))
        return clause, params


NO_BOUNDS = Bounds()


def item_rows(
    session_pk: int, kind: str, item_ids: Sequence[int], bounds: Bounds = NO_BOUNDS
) -> list[tuple[int, int, str, str, Any]]:
    """(id, position, tier, chunk hash, name) of those of `item_ids` in the session and kind
    (and inside `bounds`)."""
    ids = [int(i) for i in item_ids]
    if not ids:
        return []
    within, params = bounds.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, i.position, i.tier, c.hash, i.name FROM memory_item i "
            "JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.session_id = %s AND i.kind = %s AND i.id IN ({_marks(ids)}){within}",
            [session_pk, kind, *ids, *params],
        )
        return [(int(pk), int(pos), tier, h, speaker) for pk, pos, tier, h, speaker in cursor.fetchall()]


def turn_rows(
    session_pk: int, kind: str, positions: Iterable[int], bounds: Bounds = NO_BOUNDS
) -> list[retrieval.Turn]:
    """The session's items of `kind` at `positions` (those inside `bounds`)."""
    wanted = sorted(int(p) for p in positions)
    if not wanted:
        return []
    within, params = bounds.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.position, i.role, c.text, c.hash, i.tokens, i.name, i.occurred_at, i.utc_offset, "
            "i.meta FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.session_id = %s AND i.kind = %s AND i.position IN ({_marks(wanted)}){within}",
            [session_pk, kind, *wanted, *params],
        )
        return [
            retrieval.Turn(
                kind=kind,
                position=int(pos),
                role=role,
                text=text,
                hash=h,
                tokens=int(tokens),
                name=name,
                occurred_at=local_time(moment(when), offset),
                # SQLite hands JSON back as text; psycopg decodes it
                meta=json.loads(meta) if isinstance(meta, str) else meta,
            )
            for pos, role, text, h, tokens, name, when, offset, meta in cursor.fetchall()
        ]


def items_within(session_pk: int, kind: str, bounds: Bounds) -> np.ndarray:
    """Ids of the session's items of `kind` that happened inside `bounds`, sorted."""
    within, params = bounds.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT i.id FROM memory_item i WHERE i.session_id = %s AND i.kind = %s{within} ORDER BY i.id",
            [session_pk, kind, *params],
        )
        return np.array([row[0] for row in cursor.fetchall()], dtype=np.int64)


def substring_search(
    session_pk: int, kind: str, needle: str, *, limit: int, bounds: Bounds, budget_chars: int
) -> tuple[list[int], bool]:
    """Ids of the session's items of `kind` whose text holds `needle` (case folded), newest first,
    and whether the scan stopped before the oldest item.

    At most `budget_chars` characters of text are read, newest items first: a scan's cost is the
    text it reads. `str.find` does the matching (a few ms for 3,000,000 characters, where SQL's
    LIKE took 0.8 s on text that repeats the query's first characters).
    """
    needle = needle.lower()
    within, params = bounds.sql()
    found: list[int] = []
    scanned = 0
    below: int | None = None
    with connection.cursor() as cursor:
        while len(found) < limit:
            if scanned >= budget_chars:
                return found, True
            older = "" if below is None else " AND i.position < %s"
            # Only what is left of the budget is read of each text; a step's texts are each at
            # most an item's length, so a step holds at most SUBSTRING_BATCH of them.
            cursor.execute(
                "SELECT i.id, i.position, substr(c.text, 1, %s) FROM memory_item i "
                "JOIN memory_chunk c ON c.id = i.chunk_id "
                f"WHERE i.session_id = %s AND i.kind = %s{within}{older} ORDER BY i.position DESC LIMIT %s",
                [
                    budget_chars - scanned,
                    session_pk,
                    kind,
                    *params,
                    *([] if below is None else [below]),
                    SUBSTRING_BATCH,
                ],
            )
            rows = cursor.fetchall()
            if not rows:
                return found, False
            below = int(rows[-1][1])
            for pk, _, text in rows:
                if scanned >= budget_chars:
                    return found, True
                text = text[: budget_chars - scanned]
                scanned += len(text)
                if text.lower().find(needle) >= 0:
                    found.append(int(pk))
                    if len(found) >= limit:
                        break
    return found, False


# Items one step of the substring scan reads.
SUBSTRING_BATCH = 16


def _marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


def kinds_present(session_pk: int, kinds: Sequence[str]) -> list[str]:
    """Those of `kinds` the session holds at least one item of."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT "
            + ", ".join(
                "EXISTS(SELECT 1 FROM memory_item WHERE session_id = %s AND kind = %s)" for _ in kinds
            ),
            [v for kind in kinds for v in (session_pk, kind)],
        )
        row = cursor.fetchone()
    return [kind for kind, present in zip(kinds, row, strict=True) if present]


def recall_version(session_pk: int, kind: str) -> tuple[int, int]:
    """(compaction generation of the kind, the session's newest bullet id): see recall._version."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT generation FROM memory_tierstate WHERE session_id = %s AND kind = %s), "
            "(SELECT max(id) FROM memory_bullet WHERE session_id = %s)",
            [session_pk, kind, session_pk],
        )
        generation, newest = cursor.fetchone()
    return int(generation or 0), int(newest or 0)


def other_model_vectors(session_pk: int, kind: str, model: str) -> bool:
    """Whether any of the session's vectors of `kind` is stamped with another model than `model`."""
    # Two seeks on the (session, kind, model) index, one each side of `model`: `model <> %s`
    # walked every vector of the session.
    with connection.cursor() as cursor:
        for side in ("<", ">"):
            cursor.execute(
                f"SELECT 1 FROM memory_itemvector WHERE session_id = %s AND kind = %s AND model {side} %s "
                "LIMIT 1",
                [session_pk, kind, model],
            )
            if cursor.fetchone() is not None:
                return True
    return False


def unembedded_items(session_pk: int, kind: str, *, newest: int | None, limit: int | None) -> list[int]:
    """Ids of the session's items of `kind` with no vector, oldest first; `newest` looks only at
    that many newest items (an anti-join over the newest, not the whole session)."""
    if newest is None:
        source, where, params = "memory_item", "i.session_id = %s AND i.kind = %s AND ", [session_pk, kind]
    else:
        source = (
            "(SELECT id, position FROM memory_item WHERE session_id = %s AND kind = %s "
            "ORDER BY position DESC LIMIT %s)"
        )
        where, params = "", [session_pk, kind, newest]
    sql = (
        f"SELECT i.id FROM {source} i LEFT JOIN memory_itemvector v ON v.item_id = i.id "
        f"WHERE {where}v.id IS NULL ORDER BY i.position"
    )
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [int(row[0]) for row in cursor.fetchall()]


def sessions_missing_vectors() -> list[tuple[int, str]]:
    """(session pk, kind) of every session holding an item with no vector (the worker's sweep)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT i.session_id, i.kind FROM memory_item i "
            "LEFT JOIN memory_itemvector v ON v.item_id = i.id WHERE v.id IS NULL"
        )
        return [(int(pk), str(kind)) for pk, kind in cursor.fetchall()]


def pending_speakers(session_pk: int, kind: str) -> set[str]:
    """The names of the session's live X and Y items of `kind`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT i.name FROM memory_item i "
            "WHERE i.session_id = %s AND i.kind = %s AND i.tier IN (%s, %s)",
            [session_pk, kind, TIER_X, TIER_Y],
        )
        return {name for (name,) in cursor.fetchall() if name}


def item_texts(item_ids: Sequence[int]) -> dict[int, str]:
    ids = [int(i) for i in item_ids]
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, c.text FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.id IN ({_marks(ids)})",
            ids,
        )
        return {int(pk): text for pk, text in cursor.fetchall()}


BULLET_FIELDS = ("id", "text", "hash_refs", "generation", "protected", "first_position", "tokens")


def live_bullets(session_pk: int, kind: str, bullet_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Of `bullet_ids`, the session's live bullets of `kind`, as dicts of BULLET_FIELDS."""
    ids = [int(i) for i in bullet_ids]
    if not ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(BULLET_FIELDS)} FROM memory_bullet WHERE session_id = %s AND kind = %s "
            f"AND superseded = %s AND id IN ({_marks(ids)})",
            [session_pk, kind, False, *ids],
        )
        rows = [dict(zip(BULLET_FIELDS, row, strict=True)) for row in cursor.fetchall()]
    for row in rows:
        if isinstance(row["hash_refs"], str):  # SQLite hands JSON back as text; psycopg decodes it
            row["hash_refs"] = json.loads(row["hash_refs"])
        row["protected"] = bool(row["protected"])
    return rows


# --- keyword search: FTS5 on SQLite, tsvector on PostgreSQL -----------------------------------------


def scope_of(session_pk: int, kind: str) -> str:
    """The FTS `scope` token that keeps a MATCH inside one session and kind."""
    return f"s{session_pk}{kind}"


def _sqlite() -> bool:
    return connection.vendor == "sqlite"


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def fts_index(item_id: int, *, session_pk: int, kind: str, body: str, context: str) -> None:
    with connection.cursor() as cursor:
        if _sqlite():
            cursor.execute(
                "INSERT INTO memory_item_fts(rowid, scope, body, context) VALUES (%s, %s, %s, %s)",
                [item_id, scope_of(session_pk, kind), body, context],
            )
        elif _postgres():
            cursor.execute(
                "INSERT INTO memory_item_fts_pg(item_id, session_id, kind, body, ctx) "
                "VALUES (%s, %s, %s, to_tsvector('simple', %s), to_tsvector('simple', %s))",
                [item_id, session_pk, kind, body, context],
            )


def fts_delete(item_ids: Iterable[int]) -> None:
    """Drop items from the keyword index (PostgreSQL's rows go with their items by cascade)."""
    ids = list(item_ids)
    if not ids or not _sqlite():
        return
    with connection.cursor() as cursor:
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            cursor.execute(
                f"DELETE FROM memory_item_fts WHERE rowid IN ({', '.join(['%s'] * len(batch))})", batch
            )


def fts_search(
    session_pk: int,
    kind: str,
    query: str,
    *,
    every: bool,
    limit: int,
    context_weight: float,
    bounds: Bounds = NO_BOUNDS,
) -> list[tuple[int, float]]:
    """Item ids matching `query` inside one session and kind, best first (higher score better).

    `every`: each whitespace-separated piece must occur as an exact phrase; otherwise any word
    will do. `context_weight` 0 searches the turn's own words only (keyword match); above 0 the
    speaker, date and previous turn help too (ranking for meaning). `bounds`: only turns that
    happened inside them.
    """
    within, within_params = bounds.sql()
    # The items inside the bounds, as a subquery the index's rows are joined to.
    inside = (
        f" AND {{id}} IN (SELECT i.id FROM memory_item i WHERE i.session_id = %s AND i.kind = %s{within})"
        if bounds
        else ""
    )
    inside_params = [session_pk, kind, *within_params] if bounds else []
    if _sqlite():
        match = retrieval.fts_all(query) if every else retrieval.fts_any(query)
        if not match:
            return []
        column = "body" if context_weight == 0 else "{body context}"
        expression = f'scope : "{scope_of(session_pk, kind)}" AND {column} : ({match})'
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid, bm25(memory_item_fts, 0.0, 1.0, %s) AS score FROM memory_item_fts "
                f"WHERE memory_item_fts MATCH %s{inside.format(id='rowid')} ORDER BY score LIMIT %s",
                [context_weight, expression, *inside_params, limit],
            )
            return [(int(row[0]), -float(row[1])) for row in cursor.fetchall()]
    tsquery = retrieval.tsquery_all(query) if every else retrieval.tsquery_any(query)
    if not tsquery:
        return []
    where = "body @@ q" if context_weight == 0 else "(body @@ q OR ctx @@ q)"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT item_id, ts_rank(body, q) + %s * ts_rank(ctx, q) AS score "
            "FROM memory_item_fts_pg, to_tsquery('simple', %s) AS q "
            f"WHERE session_id = %s AND kind = %s AND {where}{inside.format(id='item_id')} "
            "ORDER BY score DESC, item_id LIMIT %s",
            [context_weight, tsquery, session_pk, kind, *inside_params, limit],
        )
        return [(int(row[0]), float(row[1])) for row in cursor.fetchall()]


# --- vector search: sqlite-vec (SQLite) or exact search over the session (elsewhere) ---------------


def _vec_table(dim: int) -> str:
    return f"memory_item_vec_{int(dim)}"


def ensure_vec_table(dim: int) -> None:
    if not _sqlite():
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_vec_table(dim)} USING vec0("
            "item_id integer primary key, session_id integer partition key, kind text, model text, "
            f"embedding float[{int(dim)}] distance_metric=cosine)"
        )


def vec_tables() -> list[int]:
    """Dimensions that have a vec0 table in this database (its shadow tables are skipped)."""
    if not _sqlite():
        return []
    prefix = "memory_item_vec_"
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE %s", [prefix + "%"])
        suffixes = [row[0][len(prefix) :] for row in cursor.fetchall()]
    return sorted(int(s) for s in suffixes if s.isdigit())


def _has_vec_table(cursor: Any, dim: int) -> bool:
    # One indexed lookup of a name, where vec_tables() lists them all (a recall asks every time).
    cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [_vec_table(dim)])
    return cursor.fetchone() is not None


def vec_write(rows: Sequence[tuple[int, int, str, str, bytes]], dim: int) -> None:
    """Mirror (item_id, session_id, kind, model, float32 bytes) rows into the vec0 table."""
    if not rows or not _sqlite():
        return
    ensure_vec_table(dim)
    table = _vec_table(dim)
    with connection.cursor() as cursor:
        cursor.executemany(f"DELETE FROM {table} WHERE item_id = %s", [(r[0],) for r in rows])
        cursor.executemany(
            f"INSERT INTO {table}(item_id, session_id, kind, model, embedding) VALUES (%s, %s, %s, %s, %s)",
            list(rows),
        )


def vec_delete(item_ids: Iterable[int]) -> None:
    ids = list(item_ids)
    if not ids or not _sqlite():
        return
    with connection.cursor() as cursor:
        for dim in vec_tables():
            cursor.executemany(f"DELETE FROM {_vec_table(dim)} WHERE item_id = %s", [(i,) for i in ids])


@dataclass(frozen=True)
class _Held(Generic[T]):
    value: T
    count: int  # rows of the session and kind when it was read
    newest: int  # the highest row id read


class SessionCache(Generic[T]):
    """A per-process cache of something built from one session and kind's rows, least recently
    used dropped first past `budget` bytes; the database stays the truth.

    Each use first reads (how many rows, the newest id) from the table's index. Ids only grow
    (AUTOINCREMENT, sequences), so rows newer than the held ones are read and added when nothing
    else changed; any other change (a reembed, a reset, a delete) rebuilds. Values are never
    changed in place: a reader keeps the one it got.

    The budget holds for every value, the only one held included: rows are read in steps
    (`_steps`), and a value that grows past the budget while it is built is dropped at once and
    its session searched where its rows live until it shrinks (a reset, a delete); the memory the
    build used goes back to the system (`release_memory`).
    """

    table = ""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._held: OrderedDict[tuple[Any, ...], _Held[T]] = OrderedDict()
        # Sessions found too big for the budget: key → their row count then.
        self._too_big: dict[tuple[Any, ...], int] = {}
        self._lock = threading.Lock()

    def get(self, session_pk: int, kind: str, *extra: Any) -> T | None:
        """The session's current value, or None when it does not fit in the budget."""
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*), coalesce(max(id), 0) FROM {self.table} WHERE session_id = %s AND kind = %s",
                [session_pk, kind],
            )
            count, newest = (int(v) for v in cursor.fetchone())
        if self._row_bytes(*extra) * count > self.budget:
            return None
        key = (connection.alias, session_pk, kind, *extra)
        with self._lock:
            held = self._held.get(key)
            too_big = self._too_big.get(key)
        if held is not None and (held.count, held.newest) == (count, newest):
            with self._lock:
                if key in self._held:
                    self._held.move_to_end(key)
            return held.value
        if too_big is not None and count >= too_big:
            return None
        value: T | None
        if held is not None and held.count + self._count(session_pk, kind, held.newest, newest) == count:
            value = self._load(session_pk, kind, held.newest, newest, held.value, *extra)
        else:  # first use, or rows went: build from all of them
            value = self._load(session_pk, kind, 0, newest, None, *extra)
        with self._lock:
            if value is None:
                self._held.pop(key, None)
                self._too_big[key] = count
            else:
                self._too_big.pop(key, None)
                self._held[key] = _Held(value, count, newest)
                self._held.move_to_end(key)
                while (
                    len(self._held) > 1
                    and sum(self._nbytes(h.value) for h in self._held.values()) > self.budget
                ):
                    self._held.popitem(last=False)
        if value is None:
            release_memory()
        return value

    def _count(self, session_pk: int, kind: str, since: int, newest: int) -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT count(*) FROM {self.table} WHERE session_id = %s AND kind = %s AND id > %s AND id <= %s",
                [session_pk, kind, since, newest],
            )
            return int(cursor.fetchone()[0])

    def _load(
        self, session_pk: int, kind: str, since: int, newest: int, value: T | None, *extra: Any
    ) -> T | None:
        """`value` with the rows in (since, newest] added (built, when None), step by step; None
        as soon as it outgrows the budget."""
        steps = self._steps(session_pk, kind, since, newest)
        for low, high in steps:
            rows = self._rows(session_pk, kind, low, high, *extra)
            value = self._build(rows) if value is None else self._extend(value, rows)
            if self._nbytes(value) > self.budget:
                return None
        if value is None:
            value = self._build([])
        if len(steps) > 1:
            release_memory()  # a large build's text and word lists are gone: hand their pages back
        return value

    def _steps(self, session_pk: int, kind: str, since: int, newest: int) -> list[tuple[int, int]]:
        """Id ranges (low, high] that split (since, newest] into steps of bounded size."""
        return [(since, newest)]

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._too_big.clear()

    def nbytes(self) -> int:
        """What the held values take, by their own accounting."""
        with self._lock:
            return sum(self._nbytes(h.value) for h in self._held.values())

    def _row_bytes(self, *extra: Any) -> int:
        raise NotImplementedError

    def _rows(self, session_pk: int, kind: str, since: int, newest: int, *extra: Any) -> list[Any]:
        raise NotImplementedError

    def _build(self, rows: list[Any]) -> T:
        raise NotImplementedError

    def _extend(self, value: T, rows: list[Any]) -> T:
        raise NotImplementedError

    def _nbytes(self, value: T) -> int:
        raise NotImplementedError


def release_memory() -> None:
    """Hand freed heap pages back to the system (glibc keeps them otherwise: a recall that built a
    large index left the process at its peak). Elsewhere, nothing."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL("libc.so.6")
            _libc.malloc_trim  # noqa: B018 (raises AttributeError where glibc is not the C library)
        except (OSError, AttributeError):
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


_libc: Any = None


@dataclass(frozen=True)
class _Matrix:
    item_ids: np.ndarray
    vectors: np.ndarray


class VectorCache(SessionCache[list[_Matrix]]):
    """Recently searched sessions' vectors as float32 matrices (a large one and a tail of newer
    ones, merged when the tail passes a tenth).

    sqlite-vec scans a session's vectors at ≈ 1 µs each (5 ms at 5,000; 50 ms at 50,000); a matrix
    product over the same vectors takes a tenth of that. A session too big for the budget is
    searched where its vectors live (sqlite-vec, or an exact pass on PostgreSQL).
    """

    table = "memory_itemvector"

    def search(
        self, session_pk: int, kind: str, query: np.ndarray, limit: int, among: np.ndarray | None = None
    ) -> list[tuple[int, float]] | None:
        """Item ids nearest to `query`, best first (only ids in `among`, when given); None when
        the session does not fit."""
        parts = self.get(session_pk, kind, int(query.shape[-1]))
        if parts is None:
            return None
        item_ids = np.concatenate([p.item_ids for p in parts])
        scores = np.concatenate([p.vectors @ query for p in parts])
        if among is not None:
            keep = np.isin(item_ids, among)
            item_ids, scores = item_ids[keep], scores[keep]
        if not len(item_ids):
            return []
        top = min(limit, len(scores))
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.lexsort((best, -scores[best]))]
        return [(int(item_ids[i]), float(scores[i])) for i in best]

    def _row_bytes(self, dim: int) -> int:  # type: ignore[override]
        return dim * 4

    def _rows(self, session_pk: int, kind: str, since: int, newest: int, dim: int) -> list[Any]:  # type: ignore[override]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT item_id, vector FROM memory_itemvector WHERE session_id = %s AND kind = %s "
                "AND id > %s AND id <= %s AND dim = %s ORDER BY id",
                [session_pk, kind, since, newest, dim],
            )
            return cursor.fetchall()

    @staticmethod
    def _matrix(rows: list[Any]) -> _Matrix:
        item_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        blob = b"".join(bytes(r[1]) for r in rows)
        return _Matrix(item_ids, np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1))

    def _build(self, rows: list[Any]) -> list[_Matrix]:
        return [self._matrix(rows)]

    def _extend(self, value: list[_Matrix], rows: list[Any]) -> list[_Matrix]:
        if not rows:
            return value
        main, tail = value[0], value[1:]
        tail_rows = sum(len(p.item_ids) for p in tail) + len(rows)
        parts = [main, *tail, self._matrix(rows)]
        if tail_rows > max(64, len(main.item_ids) // 10):
            return [
                _Matrix(
                    np.concatenate([p.item_ids for p in parts]), np.concatenate([p.vectors for p in parts])
                )
            ]
        merged = parts[1:]
        return [
            main,
            _Matrix(
                np.concatenate([p.item_ids for p in merged]), np.concatenate([p.vectors for p in merged])
            ),
        ]

    def _nbytes(self, value: list[_Matrix]) -> int:
        return sum(p.vectors.nbytes + p.item_ids.nbytes for p in value)


class KeywordCache(SessionCache[bm25.Index]):
    """Recently ranked sessions' BM25 indexes (engine/bm25.py), built from the same text FTS5
    indexes: each item's words and its context (speaker, date, the turn before)."""

    table = "memory_item"

    def _row_bytes(self) -> int:  # type: ignore[override]
        return 600  # postings of ≈ 60 words a turn, measured ≈ 500 bytes

    def _rows(self, session_pk: int, kind: str, since: int, newest: int) -> list[Any]:  # type: ignore[override]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.id, c.text, i.role, i.name, i.occurred_at, i.utc_offset, "
                "pc.text, p.role, p.name, p.occurred_at, p.utc_offset FROM memory_item i "
                "JOIN memory_chunk c ON c.id = i.chunk_id "
                "LEFT JOIN memory_item p ON p.session_id = i.session_id AND p.kind = i.kind "
                "AND p.position = i.position - 1 "
                "LEFT JOIN memory_chunk pc ON pc.id = p.chunk_id "
                "WHERE i.session_id = %s AND i.kind = %s AND i.id > %s AND i.id <= %s ORDER BY i.id",
                [session_pk, kind, since, newest],
            )
            rows = cursor.fetchall()
        docs = []
        for pk, text, *turn in rows:
            said = said_from_sql(text, *turn[:4])
            assert said is not None  # an inner join's row
            context = index_context(said, said_from_sql(*turn[4:]))
            docs.append((int(pk), f"{text} {context}"))
        return docs

    def _steps(self, session_pk: int, kind: str, since: int, newest: int) -> list[tuple[int, int]]:
        # By the chunks' token counts: a step's text, and the word lists cut from it, stay small
        # whatever the turns hold (forty tool outputs of 1,000,000 characters were read at once).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.id, c.tokens FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
                "WHERE i.session_id = %s AND i.kind = %s AND i.id > %s AND i.id <= %s ORDER BY i.id",
                [session_pk, kind, since, newest],
            )
            rows = cursor.fetchall()
        steps, low, weight = [], since, 0
        for pk, tokens in rows:
            weight += int(tokens)
            if weight >= KEYWORD_STEP_TOKENS:
                steps.append((low, int(pk)))
                low, weight = int(pk), 0
        if low < newest:
            steps.append((low, newest))
        return steps

    def _build(self, rows: list[Any]) -> bm25.Index:
        return bm25.Index(rows)

    def _extend(self, value: bm25.Index, rows: list[Any]) -> bm25.Index:
        return value.add(rows) if rows else value

    def _nbytes(self, value: bm25.Index) -> int:
        return value.nbytes()


# Tokens of text one step of a keyword index's build reads (≈ 1-4 MB of text).
KEYWORD_STEP_TOKENS = 500_000

vector_cache = VectorCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)
keyword_cache = KeywordCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)


def bm25_search(
    session_pk: int,
    kind: str,
    query: str,
    *,
    limit: int,
    index: bm25.Index | None = None,
    among: np.ndarray | None = None,
) -> list[tuple[int, float]] | None:
    """Item ids holding any of the query's terms, best BM25 first (the item's words and its
    context, as `fts_search` with context_weight 1 ranks them); None when the session does not fit
    in the cache (then ask fts_search). `index`: one `keyword_cache.get` already returned for it,
    so that a recall's passes check its freshness once."""
    index = index if index is not None else keyword_cache.get(session_pk, kind)
    if index is None:
        return None
    return index.search([w for t in retrieval.query_terms(query) for w in bm25.words(t)], limit, among)


def vec_search(
    session_pk: int,
    kind: str,
    model: str | None,
    query: Vectors,
    *,
    limit: int,
    bounds: Bounds = NO_BOUNDS,
    among: np.ndarray | None = None,
) -> list[tuple[int, float]]:
    """Item ids nearest to `query` among the session's vectors of `model`, best first (cosine).

    `model` None: every vector of the session and kind — for a caller that has checked they all
    come from one model (vec0 filtering on the model's name cost a third of the search); only
    such searches use the in-process `vector_cache`.
    """
    from .models import ItemVector

    dim = int(query.shape[-1])
    query = np.asarray(query, dtype=np.float32)
    if model is None:
        found = vector_cache.search(session_pk, kind, query, limit, among if bounds else None)
        if found is not None:
            return found
    if _sqlite() and not bounds:
        model_filter, params = ("", []) if model is None else (" AND model = %s", [model])
        with connection.cursor() as cursor:
            if not _has_vec_table(cursor, dim):
                return []
            cursor.execute(
                f"SELECT item_id, distance FROM {_vec_table(dim)} WHERE embedding MATCH %s AND k = %s "
                f"AND session_id = %s AND kind = %s{model_filter}",
                [query.tobytes(), limit, session_pk, kind, *params],
            )
            return [(int(row[0]), 1.0 - float(row[1])) for row in cursor.fetchall()]
    # No vector index here, or a time window (vec0 cannot filter on it): exact search over the
    # session's own vectors (inside the window), which is one session's worth.
    vectors = ItemVector.objects.filter(session_id=session_pk, kind=kind)
    if bounds.since is not None:
        vectors = vectors.filter(item__occurred_at__gte=bounds.since)
    if bounds.until is not None:
        vectors = vectors.filter(item__occurred_at__lt=bounds.until)
    if model is not None:
        vectors = vectors.filter(model=model)
    rows = list(vectors.values_list("item_id", "vector"))
    if not rows:
        return []
    matrix = np.vstack([from_blob(bytes(v)) for _, v in rows])
    scores = matrix @ query
    order = np.argsort(-scores)[:limit]
    return [(int(rows[i][0]), float(scores[i])) for i in order]
