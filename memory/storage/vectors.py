"""Vector rows: the sqlite-vec (vec0) mirror of `ItemVector` on SQLite, vector search (the
in-process `vector_cache`, sqlite-vec, or an exact pass over the session elsewhere), and the
embedding worker's reads of items still without a vector."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection

from ..engine.embeddings import Vectors, from_blob
from .caches import best_of, vector_cache
from .sql import NO_BOUNDS, Bounds, is_sqlite


def _vec_table(dim: int) -> str:
    return f"memory_item_vec_{int(dim)}"


def ensure_vec_table(dim: int) -> None:
    if not is_sqlite():
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {_vec_table(dim)} USING vec0("
            "item_id integer primary key, session_id integer partition key, kind text, model text, "
            f"embedding float[{int(dim)}] distance_metric=cosine)"
        )


def vec_tables() -> list[int]:
    """Dimensions that have a vec0 table in this database (its shadow tables are skipped)."""
    if not is_sqlite():
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
    if not rows or not is_sqlite():
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
    if not ids or not is_sqlite():
        return
    with connection.cursor() as cursor:
        for dim in vec_tables():
            cursor.executemany(f"DELETE FROM {_vec_table(dim)} WHERE item_id = %s", [(i,) for i in ids])


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
    rows = np.reshape(query, (1, -1))  # vec_search_each makes them float32
    return vec_search_each(session_pk, kind, model, rows, limit=limit, bounds=bounds, among=among)[0]


def vec_search_each(
    session_pk: int,
    kind: str,
    model: str | None,
    queries: Vectors,
    *,
    limit: int,
    bounds: Bounds = NO_BOUNDS,
    among: np.ndarray | None = None,
    state: tuple[int, int] | None = None,
) -> list[list[tuple[int, float]]]:
    """`vec_search` for each row of `queries` (one question a row), one ranking per row: the
    session's vectors are looked up once — one freshness check of the cache, or one read of its
    vectors where there is no vector index to ask (PostgreSQL, a time window) instead of one per
    question. `state`: the vector table's `table_state` for the session, when the caller has read
    it (the cache then checks its freshness without a query). Scores may differ from a lone search's in the last bit (numpy sums a matrix product
    in another order than a matrix-vector one)."""
    from ..models import ItemVector

    queries = np.asarray(queries, dtype=np.float32)
    if queries.ndim != 2:
        # A 1-D vector sliced as rows would be `dim` questions of one number each, found nowhere.
        raise ValueError(f"queries: one row per question, got an array of shape {queries.shape}")
    dim = int(queries.shape[-1])
    if model is None:
        found = vector_cache.search_each(session_pk, kind, queries, limit, among if bounds else None, state)
        if found is not None:
            return found
    if is_sqlite() and not bounds:
        model_filter, params = ("", []) if model is None else (" AND model = %s", [model])
        with connection.cursor() as cursor:
            if not _has_vec_table(cursor, dim):
                return [[] for _ in queries]
            rankings = []
            for query in queries:  # vec0 takes one vector a search
                cursor.execute(
                    f"SELECT item_id, distance FROM {_vec_table(dim)} WHERE embedding MATCH %s AND k = %s "
                    f"AND session_id = %s AND kind = %s{model_filter}",
                    [query.tobytes(), limit, session_pk, kind, *params],
                )
                rankings.append([(int(row[0]), 1.0 - float(row[1])) for row in cursor.fetchall()])
            return rankings
    # No vector index here, or a time window (vec0 cannot filter on it): exact search over the
    # session's own vectors (inside the window), which is one session's worth.
    vectors = ItemVector.objects.filter(session_id=session_pk, kind=kind)
    if bounds.since is not None:
        vectors = vectors.filter(item__occurred_at__gte=bounds.since)
    if bounds.until is not None:
        vectors = vectors.filter(item__occurred_at__lt=bounds.until)
    if model is not None:
        vectors = vectors.filter(model=model)
    # In id order, as the cache reads them: ties go the same way on every path and every run.
    rows = list(vectors.order_by("id").values_list("item_id", "vector"))
    if not rows:
        return [[] for _ in queries]
    item_ids = np.fromiter((pk for pk, _ in rows), dtype=np.int64, count=len(rows))
    matrix = np.vstack([from_blob(bytes(v)) for _, v in rows])
    return [best_of(item_ids, column, limit) for column in (matrix @ queries.T).T]


@dataclass(frozen=True, slots=True)
class UnstoredVectors:
    """Vectors computed for one search and never stored (a recall's stragglers, which the worker
    has not embedded yet): `vectors[i]` is item `item_ids[i]`'s."""

    item_ids: np.ndarray
    vectors: np.ndarray


def with_unstored(
    rankings: list[list[tuple[int, float]]],
    unstored: UnstoredVectors,
    queries: Vectors,
    *,
    limit: int,
    among: np.ndarray | None = None,
) -> list[list[tuple[int, float]]]:
    """Each of `rankings` (one per row of `queries`, as `vec_search_each` gives them) with the
    unstored vectors scored the same way (cosine) and ranked among them (only ids in `among`, when
    given). An item stored meanwhile keeps its stored score."""
    item_ids, vectors = unstored.item_ids, unstored.vectors
    if among is not None:
        keep = np.isin(item_ids, among)
        item_ids, vectors = item_ids[keep], vectors[keep]
    if not len(item_ids):
        return rankings
    scores = vectors @ np.asarray(queries, dtype=np.float32).T  # one column per query
    merged = []
    for ranking, column in zip(rankings, scores.T, strict=True):
        stored = {pk for pk, _ in ranking}
        extra = [
            (int(pk), float(score)) for pk, score in zip(item_ids, column, strict=True) if pk not in stored
        ]
        merged.append(sorted(ranking + extra, key=lambda hit: -hit[1])[:limit])
    return merged


def other_model_vectors(session_pk: int, kind: str, model: str) -> bool:
    """Whether any of the session's vectors of `kind` is stamped with another model than `model`."""
    # Two seeks on the (session, kind, model) index, one each side of `model` (`model <> %s` walked
    # every vector of the session), in one statement: a recall asks this every time.
    side = "SELECT 1 FROM memory_itemvector WHERE session_id = %s AND kind = %s AND model {} %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT EXISTS({side.format('<')}) OR EXISTS({side.format('>')})",
            [session_pk, kind, model, session_pk, kind, model],
        )
        return bool(cursor.fetchone()[0])


def unembedded_items(session_pk: int, kind: str, *, newest: int | None, limit: int | None) -> list[int]:
    """Ids of the session's items of `kind` with no vector, oldest first; `newest` looks only at
    that many newest items (an anti-join over the newest, not the whole session)."""
    if newest is None:
        params: list[Any]
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
