"""Recall's reads: a few hundred rows by id or position, in plain SQL (the ORM took longer to
build each of these queries, 200 ids in an IN list, than the database took to answer it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection

from ..engine import retrieval
from ..models import TIER_X, TIER_Y, local_time
from .rows import moment
from .sql import NO_BOUNDS, Bounds, marks


def item_rows(
    session_pk: int, kind: str, item_ids: Sequence[int], bounds: Bounds = NO_BOUNDS, *, times: bool = True
) -> list[tuple[int, int, str, str, Any, datetime | None, str]]:
    """(id, position, tier, chunk hash, name, local time, role) of those of `item_ids` in the
    session and kind (and inside `bounds`); the time None unless `times` (decoding each is most of
    the cost of a few hundred rows, and only a question naming a time reads them)."""
    ids = [int(i) for i in item_ids]
    if not ids:
        return []
    within, params = bounds.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, i.position, i.tier, c.hash, i.name, i.occurred_at, i.utc_offset, i.role "
            "FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.session_id = %s AND i.kind = %s AND i.id IN ({marks(ids)}){within}",
            [session_pk, kind, *ids, *params],
        )
        return [
            (
                int(pk),
                int(pos),
                tier,
                h,
                speaker,
                local_time(moment(when), offset) if times and when else None,
                role,
            )
            for pk, pos, tier, h, speaker, when, offset, role in cursor.fetchall()
        ]


def turn_rows(
    session_pk: int, kind: str, positions: Iterable[int], bounds: Bounds = NO_BOUNDS
) -> list[retrieval.Turn]:
    """The session's items of `kind` at `positions` (those inside `bounds`), as much of each as
    recall's assembly reads: no name, time, meta or pin (`turn_details` has them, for the few returned).
    """
    wanted = sorted(int(p) for p in positions)
    if not wanted:
        return []
    within, params = bounds.sql()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.position, i.role, c.text, c.hash, i.tokens "
            "FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.session_id = %s AND i.kind = %s AND i.position IN ({marks(wanted)}){within}",
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
            )
            for pos, role, text, h, tokens in cursor.fetchall()
        ]


def turn_details(
    session_pk: int, kind: str, positions: Iterable[int]
) -> dict[int, tuple[str, datetime | None, dict[str, Any], bool]]:
    """position → (speaker's name, local time, meta, pinned) of the session's items of `kind` at
    `positions`: read for the turns a recall returns only (a recall weighs ≈ 450 turns and returns
    a tenth of them; decoding every one's meta and time was a sixth of its time). The pin is read
    here, not with the turns assembly weighs: it is the one of their fields that changes."""
    wanted = sorted(int(p) for p in positions)
    if not wanted:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.position, i.name, i.occurred_at, i.utc_offset, i.meta, i.pinned FROM memory_item i "
            f"WHERE i.session_id = %s AND i.kind = %s AND i.position IN ({marks(wanted)})",
            [session_pk, kind, *wanted],
        )
        return {
            int(pos): (
                name,
                local_time(moment(when), offset),
                # SQLite hands JSON back as text; psycopg decodes it
                json.loads(meta) if isinstance(meta, str) else meta,
                bool(pinned),
            )
            for pos, name, when, offset, meta, pinned in cursor.fetchall()
        }


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


def pending_speakers(session_pk: int, kind: str) -> set[str]:
    """The names of the session's live X and Y items of `kind`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT i.name FROM memory_item i "
            "WHERE i.session_id = %s AND i.kind = %s AND i.tier IN (%s, %s)",
            [session_pk, kind, TIER_X, TIER_Y],
        )
        return {name for (name,) in cursor.fetchall() if name}


def item_texts(item_ids: Sequence[int], *, chars: int) -> dict[int, str]:
    """The items' text, its first `chars` characters: cut where it is stored, so a tool output of
    megabytes is not read to use its start."""
    ids = [int(i) for i in item_ids]
    if not ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, substr(c.text, 1, CAST(%s AS integer)) FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            f"WHERE i.id IN ({marks(ids)})",
            [chars, *ids],
        )
        return {int(pk): text for pk, text in cursor.fetchall()}


BULLET_FIELDS = ("id", "text", "hash_refs", "generation", "protected", "pinned", "first_position", "tokens")


def _live_bullet_rows(
    session_pk: int,
    kind: str,
    bullet_ids: Iterable[int],
    columns: Sequence[str],
    max_tokens: int | None = None,
) -> list[tuple[Any, ...]]:
    """`columns` of those of `bullet_ids` that are the session's live bullets of `kind` (of at most
    `max_tokens` tokens, when given)."""
    ids = [int(i) for i in bullet_ids]
    if not ids:
        return []
    fits, params = ("", []) if max_tokens is None else (" AND tokens <= %s", [max_tokens])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(columns)} FROM memory_bullet WHERE session_id = %s AND kind = %s "
            f"AND superseded = %s{fits} AND id IN ({marks(ids)})",
            [session_pk, kind, False, *params, *ids],
        )
        return cursor.fetchall()


def bullet_sizes(
    session_pk: int, kind: str, bullet_ids: Iterable[int], room: int
) -> dict[int, tuple[int, int]]:
    """Of `bullet_ids`, the session's live bullets of `kind` of at most `room` tokens: id →
    (first position, tokens), without their text or citations."""
    rows = _live_bullet_rows(session_pk, kind, bullet_ids, ("id", "first_position", "tokens"), room)
    return {int(pk): (int(first), int(tokens)) for pk, first, tokens in rows}


def live_bullets(session_pk: int, kind: str, bullet_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Of `bullet_ids`, the session's live bullets of `kind`, as dicts of BULLET_FIELDS."""
    found = _live_bullet_rows(session_pk, kind, bullet_ids, BULLET_FIELDS)
    rows = [dict(zip(BULLET_FIELDS, row, strict=True)) for row in found]
    for row in rows:
        if isinstance(row["hash_refs"], str):  # SQLite hands JSON back as text; psycopg decodes it
            row["hash_refs"] = json.loads(row["hash_refs"])
        row["protected"] = bool(row["protected"])
        row["pinned"] = bool(row["pinned"])
    return rows
