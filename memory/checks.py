"""System checks: the SQLite database must have sqlite-vec and FTS5, or nothing works right; the
settings recall reads must name things that exist."""

from __future__ import annotations

from django.core.checks import Error, register
from django.db import connection

from ottoweb.db import sqlite


@register("database", deploy=True)
def sqlite_extensions(app_configs, databases=None, **kwargs):
    if connection.vendor != "sqlite":
        return []
    errors = []
    try:
        sqlite.vec_version()
    except Exception as exc:
        errors.append(
            Error(
                f"sqlite-vec is not loaded into the SQLite connection ({exc})",
                hint="Use ENGINE 'ottoweb.db' (pysqlite3 + sqlite_vec) and install requirements.txt.",
                id="memory.E001",
            )
        )
    try:
        if not sqlite.fts5_compiled():
            raise RuntimeError("SQLite was built without FTS5")
    except Exception as exc:
        errors.append(Error(f"FTS5 is not available ({exc})", id="memory.E002"))
    return errors


@register("database")
def embedding_model_recorded(app_configs, databases=None, **kwargs):
    from django.core.checks import Warning
    from django.db.utils import DatabaseError

    from .services.embedding import configured_differs

    try:
        message = configured_differs()
    except DatabaseError:  # not migrated yet: nothing recorded, nothing to compare
        return []
    return [Warning(message, id="memory.W001")] if message else []


@register()
def recall_rules_known(app_configs, **kwargs):
    """OTTO_RECALL_RULES_OFF names only rules there are: a typo would otherwise fail every recall."""
    from django.conf import settings

    from .engine.ranking import ALL_RULES

    try:
        ALL_RULES.without(settings.OTTO_RECALL_RULES_OFF)
    except ValueError as exc:
        return [Error(f"OTTO_RECALL_RULES_OFF: {exc}", id="memory.E003")]
    return []
