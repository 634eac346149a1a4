"""What the keyword index holds, read straight from its table (tests only)."""

from __future__ import annotations

from django.db import connection

from memory.storage import scope_of


def fts_count(session_pk: int, kind: str) -> int:
    """How many items of the session and kind the keyword index holds."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT count(*) FROM memory_item_fts WHERE memory_item_fts MATCH %s",
                [f'scope : "{scope_of(session_pk, kind)}"'],
            )
        else:
            cursor.execute(
                "SELECT count(*) FROM memory_item_fts_pg WHERE session_id = %s AND kind = %s",
                [session_pk, kind],
            )
        return int(cursor.fetchone()[0])
