"""One row by SQL written once from its model's fields: what the per-request lookups share
(`accounts/storage.py`, `memory/storage/lookups.py`).

The ORM spends about ten times longer building such a query than SQLite spends answering it
(≈ 0.4 ms against ≈ 0.03 ms), and an append made five of them. Here the SQL is written once from
the model's own fields, and `raw()` still turns the row into a model the usual way (each field's
converters, `from_db`), so a column added to a model is read here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar, cast

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def first_row(
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
