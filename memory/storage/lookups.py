"""The lookups every request makes (its session, a tier's state, the turn before an append), in
SQL written once per model (`ottoweb.db.rows.first_row`; its token: `accounts/storage.py`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection

from ottoweb.db.rows import first_row

from ..models import Item as ItemRow
from ..models import Session, TierState
from .sql import marks


def user_session(user_id: int, sid: str) -> Session | None:
    return first_row(Session, "user_id = %s AND sid = %s", [user_id, sid])


def tier_state(session_id: int, kind: str, *, lock: bool = False) -> TierState | None:
    return first_row(TierState, "session_id = %s AND kind = %s", [session_id, kind], lock=lock)


def item_at(session_id: int, kind: str, position: int) -> tuple[ItemRow, str] | None:
    """The item at `position` and its text."""
    item = first_row(
        ItemRow,
        "memory_item.session_id = %s AND memory_item.kind = %s AND memory_item.position = %s",
        [session_id, kind, position],
        join="JOIN memory_chunk c ON c.id = memory_item.chunk_id",
        extra=", c.text AS chunk_text",
    )
    return None if item is None else (item, item.chunk_text)  # type: ignore[attr-defined]


def chunk_ids(session_id: int, hashes: Sequence[str]) -> dict[str, int]:
    """The ids of the session's chunks with these content hashes (those it has)."""
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        for start in range(0, len(hashes), 500):
            part = hashes[start : start + 500]
            cursor.execute(
                f"SELECT hash, id FROM memory_chunk WHERE session_id = %s AND hash IN ({marks(part)})",
                [session_id, *part],
            )
            found.update(cursor.fetchall())
    return found
