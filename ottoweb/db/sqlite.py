"""SQL about the SQLite connection itself, beside the backend that opens it: what the system
checks probe (sqlite-vec, FTS5) and a write that must not wait for another writer's lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


def vec_version() -> None:
    """Raises if sqlite-vec is not loaded into the connection."""
    with connection.cursor() as cursor:
        cursor.execute("select vec_version()")
        cursor.fetchone()


def fts5_compiled() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("select sqlite_compileoption_used('ENABLE_FTS5')")
        return bool(cursor.fetchone()[0])


@contextmanager
def not_waiting() -> Iterator[None]:
    """On SQLite, a write here does not wait for another writer's lock: it fails at once instead.

    Recording a token's use is the only write a read makes; behind a long writer it would make
    the read wait for the whole busy timeout. Inside a transaction (which holds the lock already,
    or must keep its settings) nothing changes.
    """
    if connection.vendor != "sqlite" or connection.in_atomic_block:
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout")
        (waits,) = cursor.fetchone()
        cursor.execute("PRAGMA busy_timeout=0")
        try:
            yield
        finally:
            cursor.execute(f"PRAGMA busy_timeout={int(waits)}")
