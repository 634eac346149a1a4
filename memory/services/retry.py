"""Database errors that pass, tried again with backoff (the worker's jobs, the sweep)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, connection

log = logging.getLogger(__name__)

T = TypeVar("T")

# A job's claim, load, rounds, progress and finish, and the worker's vector writes, meet database
# errors that pass: SQLite's "database is locked" behind a long writer (each try already waits
# busy_timeout), a PostgreSQL connection that went away. Raised out of a task, such an error was
# acknowledged by Celery and the job stayed `queued` for good; each is tried again after these pauses.
DB_RETRY_PAUSES: tuple[float, ...] = (0.5, 1, 2, 4, 8, 16, 30)


def with_db_retry(what: str, call: Callable[[], T]) -> T:
    """`call()`, tried again with backoff while it raises DatabaseError; the last error is raised.

    Only for work that is safe to repeat and runs outside any transaction (a failed transaction
    has rolled back whole, so trying it again is trying it once).
    """
    for pause in DB_RETRY_PAUSES:
        try:
            return call()
        except DatabaseError as exc:
            if connection.in_atomic_block:
                raise  # the enclosing transaction is spoilt: whoever opened it retries
            log.warning("%s: %s; trying again in %s s", what, exc, pause)
            # A connection the error broke (PostgreSQL restarted) is replaced on the next query.
            connection.close_if_unusable_or_obsolete()
            time.sleep(pause)
    return call()
