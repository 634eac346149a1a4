"""The engine's TierStore on the ORM, and the only SQL for sqlite-vec and FTS5.

Callers hold the transaction. Every item is indexed for keyword search in the transaction that
stores it; vectors are written later, off the append path (`memory/recall.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection
from django.db.models import Q, Sum
from django.db.models.functions import Coalesce

from .engine import retrieval
from .engine.embeddings import Vectors, from_blob
from .engine.retrieval import index_context
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
        row = ItemRow.objects.create(
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
        self.index_item(row, draft.text)
        return Item(
            position=position,
            role=draft.role,
            text=draft.text,
            hash=draft.hash,
            tokens=draft.tokens,
            protected=draft.protected,
            meta=dict(draft.meta),
        )

    def index_item(self, row: ItemRow, text: str) -> None:
        """Add the item to the keyword index, with the turn before it as context."""
        previous = (
            ItemRow.objects.of_kind(self.session, row.kind)
            .filter(position=row.position - 1)
            .select_related("chunk")
            .first()
            if row.position
            else None
        )
        fts_index(
            row.pk,
            session_pk=self.session.pk,
            kind=row.kind,
            body=text,
            context=index_context(
                row.role,
                row.meta,
                previous.chunk.text if previous else None,
                previous.meta if previous else None,
            ),
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


def fts_count(session_pk: int, kind: str) -> int:
    """How many items of the session and kind the keyword index holds."""
    with connection.cursor() as cursor:
        if _sqlite():
            cursor.execute(
                "SELECT count(*) FROM memory_item_fts WHERE memory_item_fts MATCH %s",
                [f'scope : "{scope_of(session_pk, kind)}"'],
            )
        else:
            cursor.execute(
                "SELECT count(*) FROM memory_item_fts_pg WHERE session_id = %s AND kind = %s",
                [session_pk, kind],
            )
        return int(cursor.fetchone()[0])


def fts_search(
    session_pk: int, kind: str, query: str, *, every: bool, limit: int, context_weight: float
) -> list[tuple[int, float]]:
    """Item ids matching `query` inside one session and kind, best first (higher score better).

    `every`: each whitespace-separated piece must occur as an exact phrase; otherwise any word
    will do. `context_weight` 0 searches the turn's own words only (keyword match); above 0 the
    speaker, date and previous turn help too (ranking for meaning).
    """
    if _sqlite():
        match = retrieval.fts_all(query) if every else retrieval.fts_any(query)
        if not match:
            return []
        column = "body" if context_weight == 0 else "{body context}"
        expression = f'scope : "{scope_of(session_pk, kind)}" AND {column} : ({match})'
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT rowid, bm25(memory_item_fts, 0.0, 1.0, %s) AS score FROM memory_item_fts "
                "WHERE memory_item_fts MATCH %s ORDER BY score LIMIT %s",
                [context_weight, expression, limit],
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
            f"WHERE session_id = %s AND kind = %s AND {where} ORDER BY score DESC, item_id LIMIT %s",
            [context_weight, tsquery, session_pk, kind, limit],
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


def vec_search(
    session_pk: int, kind: str, model: str | None, query: Vectors, *, limit: int
) -> list[tuple[int, float]]:
    """Item ids nearest to `query` among the session's vectors of `model`, best first (cosine).

    `model` None: every vector of the session and kind — for a caller that has checked they all
    come from one model (vec0 filtering on the model's name cost a third of the search).
    """
    from .models import ItemVector

    dim = int(query.shape[-1])
    if _sqlite():
        if dim not in vec_tables():
            return []
        model_filter, params = ("", []) if model is None else (" AND model = %s", [model])
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT item_id, distance FROM {_vec_table(dim)} WHERE embedding MATCH %s AND k = %s "
                f"AND session_id = %s AND kind = %s{model_filter}",
                [np.asarray(query, dtype=np.float32).tobytes(), limit, session_pk, kind, *params],
            )
            return [(int(row[0]), 1.0 - float(row[1])) for row in cursor.fetchall()]
    # No vector index here: exact search over the session's own vectors, which is one session's worth.
    vectors = ItemVector.objects.filter(session_id=session_pk, kind=kind)
    if model is not None:
        vectors = vectors.filter(model=model)
    rows = list(vectors.values_list("item_id", "vector"))
    if not rows:
        return []
    matrix = np.vstack([from_blob(bytes(v)) for _, v in rows])
    scores = matrix @ np.asarray(query, dtype=np.float32)
    order = np.argsort(-scores)[:limit]
    return [(int(rows[i][0]), float(scores[i])) for i in order]
