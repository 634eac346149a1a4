"""The keyword index on PostgreSQL: tsvectors of each item's words and of its context."""

from __future__ import annotations

from django.db import migrations

CREATE = [
    """
    CREATE TABLE IF NOT EXISTS memory_item_fts_pg (
        item_id bigint PRIMARY KEY REFERENCES memory_item(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
        session_id bigint NOT NULL,
        kind varchar(16) NOT NULL,
        body tsvector NOT NULL,
        ctx tsvector NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS memory_item_fts_pg_scope ON memory_item_fts_pg (session_id, kind)",
    "CREATE INDEX IF NOT EXISTS memory_item_fts_pg_body ON memory_item_fts_pg USING gin (body)",
    "CREATE INDEX IF NOT EXISTS memory_item_fts_pg_ctx ON memory_item_fts_pg USING gin (ctx)",
]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP TABLE IF EXISTS memory_item_fts_pg")


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_job_claimed_by")]
    operations = [migrations.RunPython(forwards, backwards)]
