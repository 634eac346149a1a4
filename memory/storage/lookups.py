"""The lookups every request makes (its token and user, its session, a tier's state, the turn
before an append), in SQL written once per model.

The ORM spends about ten times longer building such a query than SQLite spends answering it
(≈ 0.4 ms against ≈ 0.03 ms), and an append made five of them. Here the SQL is written once from
the model's own fields, and `raw()` still turns the row into a model the usual way (each field's
converters, `from_db`), so a column added to a model is read here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar, cast

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model

from ..models import ApiToken, Session, TierState
from ..models import Item as ItemRow
from .sql import marks

M = TypeVar("M", bound=Model)


def _first(
    model: type[M], where: str, params: Sequence[Any], *, lock: bool = False, join: str = "", extra: str = ""
) -> M | None:
    """The first `model` row matching `where`, or None; `extra` columns (from a `join`) become
    attributes. `lock`: SELECT … FOR UPDATE where the database has it (SQLite's transactions take
    the write lock at BEGIN instead)."""
    table = connection.ops.quote_name(model._meta.db_table)
    sql = f"SELECT {_columns(model)}{extra} FROM {table} {join} WHERE {where} LIMIT 1"
    if lock and connection.features.has_select_for_update:
        sql += " FOR UPDATE"
    return next(iter(model._default_manager.raw(sql, params)), None)


@cache
def _columns(model: type[Model]) -> str:
    """The model's columns, qualified by its table (a join may share their names)."""
    table = connection.ops.quote_name(model._meta.db_table)
    return ", ".join(
        f"{table}.{connection.ops.quote_name(cast(str, f.column))}" for f in model._meta.concrete_fields
    )


def live_token(digest: str) -> ApiToken | None:
    """The unrevoked token with this digest, its user loaded (None: no such token)."""
    token = _first(ApiToken, "digest = %s AND revoked_at IS NULL", [digest])
    # Two lookups, not a join: raw() builds one model a row.
    if token is not None:
        user = _first(get_user_model(), "id = %s", [token.user_id])
        if user is None:
            return None
        token.user = user
    return token


def user_session(user_id: int, sid: str) -> Session | None:
    return _first(Session, "user_id = %s AND sid = %s", [user_id, sid])


def tier_state(session_id: int, kind: str, *, lock: bool = False) -> TierState | None:
    return _first(TierState, "session_id = %s AND kind = %s", [session_id, kind], lock=lock)


def item_at(session_id: int, kind: str, position: int) -> tuple[ItemRow, str] | None:
    """The item at `position` and its text."""
    item = _first(
        ItemRow,
        "memory_item.session_id = %s AND memory_item.kind = %s AND memory_item.position = %s",
        [session_id, kind, position],
        join="JOIN memory_chunk c ON c.id = memory_item.chunk_id",
        extra=", c.text AS chunk_text",
    )
    # chunk_text is the column `extra` selects, set on the row by Django's raw query: no field declares it.
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
