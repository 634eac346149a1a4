"""Every error record's tool made one line, as POST /lessons/errors holds it since 034afc9
(lessons.services._tool): a record written before could hold a line break, a tab or a direction
override in its tool, and then no lookup of that tool ("bash") found it — a related-errors
lookup, /runs/fit's attached lessons and the dashboard's filter all match the tool by name."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from memory.engine.types import one_line_label

# A tool that was nothing but refused characters still needs a name: records need one to be shown.
UNNAMED = "unnamed tool"


def clean_error_tools(record_model: Any) -> int:
    """Rewrite each tool label_problem refuses (engine.types.one_line_label: a line break or tab a
    space, a control character or direction override dropped, the ends trimmed); the number of
    records changed. Nothing else is touched: `updated_at`, the expiry and the vector stay (the
    vector's "tool: error" text differs by whitespace at most, or by invisible characters)."""
    limit = record_model._meta.get_field("tool").max_length
    changes = []
    # Read whole before writing: SQLite does not isolate a cursor from updates to its own table.
    for pk, tool in record_model.objects.order_by("pk").values_list("pk", "tool"):
        clean = one_line_label(tool, max_chars=limit) or UNNAMED
        if clean != tool:
            changes.append((pk, clean))
    for pk, clean in changes:
        record_model.objects.filter(pk=pk).update(tool=clean)
    return len(changes)


def forwards(apps: Any, schema_editor: Any) -> None:
    clean_error_tools(apps.get_model("lessons", "ErrorRecord"))


class Migration(migrations.Migration):
    dependencies = [("lessons", "0001_initial")]

    # Backwards there is nothing to undo: the old schema takes the cleaned names as they are.
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
