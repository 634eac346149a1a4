"""Engine values (`memory.engine.types`, `engine.retrieval.Said`) from the ORM's rows and from
raw SQL's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..engine.retrieval import Said
from ..engine.types import Bullet, Item
from ..models import Bullet as BulletRow
from ..models import Item as ItemRow
from ..models import Session, local_time, offset_minutes


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
        pinned=row.pinned,
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
        pinned=row.pinned,
        name=row.name,
        occurred_at=row.when,
    )


def bullet_row(session: Session, kind: str, bullet: Bullet) -> BulletRow:
    """An unsaved row for an engine bullet of `session`'s `kind`."""
    return BulletRow(
        session=session,
        kind=kind,
        generation=bullet.generation,
        text=bullet.text,
        hash_refs=list(bullet.hash_refs),
        tokens=bullet.tokens,
        first_position=bullet.first_position,
        protected=bullet.protected,
        role=bullet.role or "",
        pinned=bullet.pinned,
        name=bullet.name,
        occurred_at=bullet.occurred_at,
        utc_offset=offset_minutes(bullet.occurred_at) if bullet.occurred_at else 0,
    )
