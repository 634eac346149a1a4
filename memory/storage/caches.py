"""Per-process caches of a session's vectors (`vector_cache`) and BM25 index (`keyword_cache`),
within a memory budget; the database stays the truth."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, TypeVarTuple

import numpy as np
from django.conf import settings
from django.db import connection

from ottoweb.heap import release_memory

from ..engine import bm25
from ..engine.retrieval import index_context
from ..models import Item
from .rows import said_from_sql

T = TypeVar("T")
# What else than (session, kind) a cache's values are keyed by: a vector's dimension, or nothing.
Extra = TypeVarTuple("Extra")


def table_state(table: str, session_pk: int, kind: str) -> tuple[int, int]:
    """(rows, newest id) of one session and kind in `table`: what tells a cached value is current."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), coalesce(max(id), 0) FROM {table} WHERE session_id = %s AND kind = %s",
            [session_pk, kind],
        )
        count, newest = cursor.fetchone()
    return int(count), int(newest)


@dataclass(frozen=True)
class _Held(Generic[T]):
    value: T
    count: int  # rows of the session and kind when it was read
    newest: int  # the highest row id read


class SessionCache(Generic[T, *Extra]):
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

    def get(
        self, session_pk: int, kind: str, *extra: *Extra, state: tuple[int, int] | None = None
    ) -> T | None:
        """The session's current value, or None when it does not fit in the budget. `state`: the
        table's `table_state` for the session, when the caller has just read it (two caches over
        one table, asked in one recall, need it once)."""
        count, newest = state if state is not None else table_state(self.table, session_pk, kind)
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
        self, session_pk: int, kind: str, since: int, newest: int, value: T | None, *extra: *Extra
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

    def _row_bytes(self, *extra: *Extra) -> int:
        raise NotImplementedError

    def _rows(self, session_pk: int, kind: str, since: int, newest: int, *extra: *Extra) -> list[Any]:
        raise NotImplementedError

    def _build(self, rows: list[Any]) -> T:
        raise NotImplementedError

    def _extend(self, value: T, rows: list[Any]) -> T:
        raise NotImplementedError

    def _nbytes(self, value: T) -> int:
        raise NotImplementedError


def best_of(item_ids: np.ndarray, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    """The `limit` best (item id, score), best first; ties to the earlier row, every run."""
    top = min(limit, len(scores))
    if top <= 0:
        return []
    best = np.argpartition(-scores, top - 1)[:top]
    best = best[np.lexsort((best, -scores[best]))]
    return [(int(item_ids[i]), float(scores[i])) for i in best]


@dataclass(frozen=True)
class _Matrix:
    item_ids: np.ndarray
    vectors: np.ndarray


class VectorCache(SessionCache[list[_Matrix], int]):
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
        found = self.search_each(session_pk, kind, query[np.newaxis, :], limit, among)
        return None if found is None else found[0]

    def search_each(
        self,
        session_pk: int,
        kind: str,
        queries: np.ndarray,
        limit: int,
        among: np.ndarray | None = None,
        state: tuple[int, int] | None = None,
    ) -> list[list[tuple[int, float]]] | None:
        """`search` for each row of `queries`, with one freshness check (none when the caller
        read the table's `state`) and one matrix product (a recall asks the question and its
        first-person form); None when the session does not fit. Scores may differ from a lone
        search's in the last bit (another summation order)."""
        parts = self.get(session_pk, kind, int(queries.shape[-1]), state=state)
        if parts is None:
            return None
        parts = [p for p in parts if len(p.item_ids)]  # a session with no vectors of this kind yet
        if not parts:
            return [[] for _ in queries]
        item_ids = np.concatenate([p.item_ids for p in parts])
        scores = np.concatenate([p.vectors @ queries.T for p in parts])  # one column per query
        if among is not None:
            keep = np.isin(item_ids, among)
            item_ids, scores = item_ids[keep], scores[keep]
        return [best_of(item_ids, column, limit) for column in scores.T]

    def _row_bytes(self, dim: int) -> int:
        return dim * 4

    def _rows(self, session_pk: int, kind: str, since: int, newest: int, dim: int) -> list[Any]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT item_id, vector FROM memory_itemvector WHERE session_id = %s AND kind = %s "
                "AND id > %s AND id <= %s AND dim = %s ORDER BY id",
                [session_pk, kind, since, newest, dim],
            )
            return cursor.fetchall()

    @staticmethod
    def _matrix(rows: list[Any]) -> _Matrix:
        if not rows:
            # No vector, so no width to shape by: search skips it, the first rows replace it.
            return _Matrix(np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
        item_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        blob = b"".join(bytes(r[1]) for r in rows)
        return _Matrix(item_ids, np.frombuffer(blob, dtype=np.float32).reshape(len(rows), -1))

    def _build(self, rows: list[Any]) -> list[_Matrix]:
        return [self._matrix(rows)]

    def _extend(self, value: list[_Matrix], rows: list[Any]) -> list[_Matrix]:
        if not rows:
            return value
        if not any(len(p.item_ids) for p in value):
            return self._build(rows)
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

    table = Item._meta.db_table

    def _row_bytes(self) -> int:
        return 600  # postings of ≈ 60 words a turn, measured ≈ 500 bytes

    def _rows(self, session_pk: int, kind: str, since: int, newest: int) -> list[Any]:
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


class ItemCache(SessionCache[dict[int, tuple[int, str, Any, Any, str]]]):
    """Recently ranked sessions' items as the ranking's candidates read them: item id → (position,
    speaker, occurred_at and utc_offset as stored, role). None of these changes once an item is written,
    so new items are added and only a deletion rebuilds; which items are candidates changes with
    compactions, and is `uncited_archived`'s (per version). A recall read them from 200 rows
    joined to their chunks, a tenth of its time at 5,000 turns."""

    table = Item._meta.db_table

    def _row_bytes(self) -> int:
        return 240  # measured 235: a dict entry, a tuple, an int and a time string; names shared

    def _rows(self, session_pk: int, kind: str, since: int, newest: int) -> list[Any]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, position, name, occurred_at, utc_offset, role FROM memory_item "
                "WHERE session_id = %s AND kind = %s AND id > %s AND id <= %s",
                [session_pk, kind, since, newest],
            )
            return cursor.fetchall()

    def _build(self, rows: list[Any]) -> dict[int, tuple[int, str, Any, Any, str]]:
        return self._extend({}, rows)

    def _extend(
        self, value: dict[int, tuple[int, str, Any, Any, str]], rows: list[Any]
    ) -> dict[int, tuple[int, str, Any, Any, str]]:
        shared: dict[str, str] = {}  # one string per speaker and role, not one per turn
        grown = dict(value)  # a reader keeps the value it got
        for pk, position, name, when, offset, role in rows:
            grown[int(pk)] = (
                int(position),
                shared.setdefault(name, name),
                when,
                offset,
                shared.setdefault(role, role),
            )
        return grown

    def _nbytes(self, value: dict[int, tuple[int, str, Any, Any, str]]) -> int:
        return len(value) * self._row_bytes()


# Tokens of text one step of a keyword index's build reads (≈ 1-4 MB of text).
KEYWORD_STEP_TOKENS = 500_000

vector_cache = VectorCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)
keyword_cache = KeywordCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)
item_cache = ItemCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)
