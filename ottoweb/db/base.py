"""The backend module Django loads for ENGINE "ottoweb.db"."""

from __future__ import annotations

import sys
import threading

import pysqlite3
import pysqlite3.dbapi2

if "django.db.backends.sqlite3.base" in sys.modules:
    raise RuntimeError(
        "django.db.backends.sqlite3 was imported before ottoweb.db; it would be bound to the "
        "stdlib sqlite3, which cannot load sqlite-vec"
    )
# Django's SQLite backend does `from sqlite3 import dbapi2`; point that name at pysqlite3 first.
sys.modules["sqlite3"] = pysqlite3
sys.modules["sqlite3.dbapi2"] = pysqlite3.dbapi2

import sqlite_vec  # noqa: E402
from django.db.backends.sqlite3 import base as sqlite_base  # noqa: E402

# (The busy timeout is the connection's `timeout` option: settings.OTTO_SQLITE_BUSY_SECONDS.)
PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    # NORMAL is durable across a process crash in WAL mode (only power loss can drop the last commits).
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
)


# SQLite 3.51.1 (what pysqlite3-binary 0.5.4.post2, the newest wheel, bundles) can deadlock when
# one thread opens a connection to a file while another closes one (a lock-order inversion in the
# unix VFS, fixed in 3.51.2). runserver opens and closes a connection per request thread, and the
# web server hung mid-run (docs/benchmarks.md). Opening and closing one at a time avoids it; both
# are rare next to the queries in between.
_OPEN_CLOSE = threading.Lock()


class DatabaseWrapper(sqlite_base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        with _OPEN_CLOSE:
            connection = super().get_new_connection(conn_params)
            connection.enable_load_extension(True)
            sqlite_vec.load(connection)
            connection.enable_load_extension(False)
            for pragma in PRAGMAS:
                connection.execute(pragma)
        return connection

    # Django's BaseDatabaseWrapper._close, which django-stubs does not declare.
    def _close(self) -> None:
        with _OPEN_CLOSE:
            super()._close()  # type: ignore[misc]
