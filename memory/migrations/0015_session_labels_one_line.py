"""Every session's title and workspace made one line, as POST /sessions and import hold them
(services.sessions.session_label_problem): a session created before that rule could hold a line
break or a direction override, and export a document its own import refuses."""

from __future__ import annotations

from typing import Any

from django.db import migrations

from memory.engine.types import one_line_label


def clean_session_labels(session_model: Any) -> int:
    """Rewrite each title and workspace label_problem refuses (engine.types.one_line_label: a line
    break or tab a space, a control character or direction override dropped, the ends trimmed) or
    longer than its column; the number of sessions changed. Nothing else is touched, `updated_at`
    included. No uniqueness is at stake: only (user, sid) is unique."""
    limit = {field: session_model._meta.get_field(field).max_length for field in ("title", "workspace")}
    changes = []
    # Read whole before writing: SQLite does not isolate a cursor from updates to its own table.
    for pk, title, workspace in session_model.objects.order_by("pk").values_list("pk", "title", "workspace"):
        clean = {
            "title": one_line_label(title, max_chars=limit["title"]),
            "workspace": one_line_label(workspace, max_chars=limit["workspace"]),
        }
        if clean != {"title": title, "workspace": workspace}:
            changes.append((pk, clean))
    for pk, clean in changes:
        session_model.objects.filter(pk=pk).update(**clean)
    return len(changes)


def forwards(apps: Any, schema_editor: Any) -> None:
    clean_session_labels(apps.get_model("memory", "Session"))


class Migration(migrations.Migration):
    dependencies = [("memory", "0014_move_accounts_models")]

    # Backwards there is nothing to undo: the old schema takes the cleaned labels as they are.
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
