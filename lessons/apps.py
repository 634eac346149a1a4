from __future__ import annotations

from django.apps import AppConfig


class LessonsConfig(AppConfig):
    name = "lessons"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Error memory builds on memory, and memory imports nothing of it: what memory's interfaces
        # offer of it is registered here, by path (memory/hooks.py).
        from memory import hooks

        hooks.provide_related_errors("lessons.services.related_to_failure")
        hooks.add_mcp_tools("lessons.mcp.tools")
        hooks.add_reembed_step("lessons", "lessons.services.reembed_errors")
