"""The keyword index follows its items by trigger, on both backends.

PostgreSQL: with a foreign key from memory_item_fts_pg (a table no model declares) to memory_item,
a plain TRUNCATE of memory_item is refused, so `manage.py flush` (and every test that flushes)
failed. Triggers keep the guarantee — an item's index row goes with it, on DELETE and on TRUNCATE —
without the reference. SQLite: a deleted item's FTS5 row stayed behind unless the code deleting it
remembered to remove it (flush did not).
"""

from django.db import migrations

FORWARDS = [
    "ALTER TABLE memory_item_fts_pg DROP CONSTRAINT IF EXISTS memory_item_fts_pg_item_id_fkey",
    """
    CREATE OR REPLACE FUNCTION memory_item_fts_pg_forget() RETURNS trigger AS $$
    BEGIN
        DELETE FROM memory_item_fts_pg WHERE item_id = OLD.id;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS memory_item_fts_pg_forget ON memory_item",
    "CREATE TRIGGER memory_item_fts_pg_forget AFTER DELETE ON memory_item "
    "FOR EACH ROW EXECUTE FUNCTION memory_item_fts_pg_forget()",
    """
    CREATE OR REPLACE FUNCTION memory_item_fts_pg_truncate() RETURNS trigger AS $$
    BEGIN
        TRUNCATE memory_item_fts_pg;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    "DROP TRIGGER IF EXISTS memory_item_fts_pg_truncate ON memory_item",
    "CREATE TRIGGER memory_item_fts_pg_truncate AFTER TRUNCATE ON memory_item "
    "FOR EACH STATEMENT EXECUTE FUNCTION memory_item_fts_pg_truncate()",
]

BACKWARDS = [
    "DROP TRIGGER IF EXISTS memory_item_fts_pg_truncate ON memory_item",
    "DROP TRIGGER IF EXISTS memory_item_fts_pg_forget ON memory_item",
    "DROP FUNCTION IF EXISTS memory_item_fts_pg_truncate()",
    "DROP FUNCTION IF EXISTS memory_item_fts_pg_forget()",
    "DELETE FROM memory_item_fts_pg WHERE item_id NOT IN (SELECT id FROM memory_item)",
    "ALTER TABLE memory_item_fts_pg ADD CONSTRAINT memory_item_fts_pg_item_id_fkey FOREIGN KEY (item_id) "
    "REFERENCES memory_item(id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED",
]


SQLITE_FORWARDS = [
    "CREATE TRIGGER IF NOT EXISTS memory_item_fts_forget AFTER DELETE ON memory_item "
    "BEGIN DELETE FROM memory_item_fts WHERE rowid = OLD.id; END",
]
SQLITE_BACKWARDS = ["DROP TRIGGER IF EXISTS memory_item_fts_forget"]


def _run(postgres, sqlite):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        vendor = schema_editor.connection.vendor
        for statement in {"postgresql": postgres, "sqlite": sqlite}.get(vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("memory", "0006_audit_entry")]
    operations = [
        migrations.RunPython(_run(FORWARDS, SQLITE_FORWARDS), _run(BACKWARDS, SQLITE_BACKWARDS)),
    ]
