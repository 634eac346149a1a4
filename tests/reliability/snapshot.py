"""Every row of the database, to prove a refused or failed request wrote nothing."""

from __future__ import annotations

from django.db import connection

# Tables a refused request may still write, on purpose: the audit trail records the attempt, and the
# test client's logins live in django_session.
WRITTEN_ON_PURPOSE = {"memory_auditentry", "django_session"}


def all_rows() -> dict[str, list[str]]:
    """Every row of every table, index tables and their shadow tables included, order-free."""
    rows: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            if table in WRITTEN_ON_PURPOSE:
                continue
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            rows[table] = sorted(repr(row) for row in cursor.fetchall())
    return rows
