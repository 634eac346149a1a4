"""Keyword search: the FTS5 index (SQLite) or tsvector rows (PostgreSQL) of record, and BM25
ranking from the in-process `keyword_cache` when the session fits in it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection

from ..engine import bm25, retrieval
from .caches import keyword_cache
from .sql import NO_BOUNDS, Bounds, is_postgres, is_sqlite


def scope_of(session_pk: int, kind: str) -> str:
    """The FTS `scope` token that keeps a MATCH inside one session and kind."""
    return f"s{session_pk}{kind}"


def fts_index_many(entries: Sequence[tuple[int, int, str, str, str]]) -> None:
    """Index items: (item id, session pk, kind, body, context) each, in one statement."""
    if not entries:
        return
    with connection.cursor() as cursor:
        if is_sqlite():
            cursor.executemany(
                "INSERT INTO memory_item_fts(rowid, scope, body, context) VALUES (%s, %s, %s, %s)",
                [(i, scope_of(s, k), body, ctx) for i, s, k, body, ctx in entries],
            )
        elif is_postgres():
            cursor.executemany(
                "INSERT INTO memory_item_fts_pg(item_id, session_id, kind, body, ctx) "
                "VALUES (%s, %s, %s, to_tsvector('simple', %s), to_tsvector('simple', %s))",
                list(entries),
            )


def fts_delete(item_ids: Iterable[int]) -> None:
    """Drop items from the keyword index (PostgreSQL's rows go with their items by cascade)."""
    ids = list(item_ids)
    if not ids or not is_sqlite():
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
    if is_sqlite():
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
