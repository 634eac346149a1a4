"""Per-process cache of the turns recall's assembly reads (`turn_cache`), and `window_turns`, which
reads them from it or from the database.

A recall at 5,000 turns reads ≈ 370 turns (the windows around its best 150 hits) to return ≈ 50;
reading them joined to their chunks was a sixth of its time. What assembly reads of a turn — its
role, text, hash and tokens — never changes once it is written (a pin is read with the returned
turns' details), so, as for `item_cache`, new turns are added and only a deletion rebuilds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from ..engine import retrieval
from ..models import Item
from .caches import SessionCache
from .reads import turn_rows
from .sql import Bounds

# A turn longer than this (a tool output, a pasted log) is read from the database when a recall
# wants it, not held: the cache stays near the size of a conversation's own words.
HELD_TOKENS = 1_000
# What a held turn costs besides its text: the tuple, the dict's entry, the hash.
TURN_OVERHEAD_BYTES = 200


@dataclass(frozen=True, slots=True)
class HeldTurns:
    """position → (role, text or None when too long to hold, chunk hash, tokens)."""

    turns: dict[int, tuple[str, str | None, str, int]]
    nbytes: int


class TurnCache(SessionCache[HeldTurns]):
    table = Item._meta.db_table

    def _row_bytes(self) -> int:
        return 400  # an estimate for the budget's first check; `_nbytes` counts the text held

    def _rows(self, session_pk: int, kind: str, since: int, newest: int) -> list[Any]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT i.position, i.role, CASE WHEN i.tokens <= %s THEN c.text END, c.hash, i.tokens "
                "FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
                "WHERE i.session_id = %s AND i.kind = %s AND i.id > %s AND i.id <= %s",
                [HELD_TOKENS, session_pk, kind, since, newest],
            )
            return cursor.fetchall()

    def _build(self, rows: list[Any]) -> HeldTurns:
        return self._extend(HeldTurns({}, 0), rows)

    def _extend(self, value: HeldTurns, rows: list[Any]) -> HeldTurns:
        roles: dict[str, str] = {}  # one string per role, not one per turn
        grown = dict(value.turns)  # a reader keeps the value it got
        nbytes = value.nbytes
        for position, role, text, h, tokens in rows:
            grown[int(position)] = (roles.setdefault(role, role), text, h, int(tokens))
            nbytes += TURN_OVERHEAD_BYTES + (len(text) if text is not None else 0)
        return HeldTurns(grown, nbytes)

    def _nbytes(self, value: HeldTurns) -> int:
        return value.nbytes


turn_cache = TurnCache(settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024)


def window_turns(
    session_pk: int, kind: str, positions: Iterable[int], bounds: Bounds, *, state: tuple[int, int]
) -> list[retrieval.Turn]:
    """The session's turns of `kind` at `positions` (those inside `bounds`), as assembly reads them
    (`turn_rows`' fields; a turn's pin is read with the returned turns' details).
    `state`: the items' `table_state`, read once per recall."""
    held = None if bounds else turn_cache.get(session_pk, kind, state=state)
    if held is None:
        # Bounded in time (a held turn has no time), or a session too big for the budget.
        return turn_rows(session_pk, kind, positions, bounds)
    found, unheld = [], []
    for position in positions:
        turn = held.turns.get(position)
        if turn is None:
            continue  # no such turn (a window's edge past the first or the newest)
        role, text, h, tokens = turn
        if text is None:
            unheld.append(position)
            continue
        found.append(
            retrieval.Turn(kind=kind, position=position, role=role, text=text, hash=h, tokens=tokens)
        )
    if unheld:
        found.extend(turn_rows(session_pk, kind, unheld, bounds))
    return found
