"""What the raw SQL of this package shares: the database's vendor, IN-list placeholders, and
recall's time window as an SQL clause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection


def is_sqlite() -> bool:
    return connection.vendor == "sqlite"


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def marks(values: Sequence[Any]) -> str:
    return ", ".join(["%s"] * len(values))


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
