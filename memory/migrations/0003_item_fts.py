"""The FTS5 index of items (SQLite only; PostgreSQL uses its own full-text search)."""

from __future__ import annotations

from django.db import migrations

# Contentless: the text lives in memory_chunk; the index keeps only what BM25 needs.
# `scope` ("<session pk>k<kind>") lets one MATCH stay inside one session and kind.
# `body` is the turn itself (keyword match); `context` is what helps it be found (speaker, date,
# the turn before) and is searched only when ranking for meaning.
CREATE = """
CREATE VIRTUAL TABLE IF NOT EXISTS memory_item_fts USING fts5(
    scope, body, context,
    content='', contentless_delete=1,
    tokenize="unicode61 remove_diacritics 2 tokenchars '_'"
)
"""


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(CREATE)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TABLE IF EXISTS memory_item_fts")


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_retrieval_jobs_scoped")]
    operations = [migrations.RunPython(forwards, backwards)]
