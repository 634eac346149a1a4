from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

from .engine import config


def engine_config() -> config.EngineConfig:
    """The engine's configuration, from this process's settings (the one place it is built)."""
    return config.EngineConfig(
        model_cache=settings.OTTO_MODEL_CACHE,
        minilm_dir=Path(settings.OTTO_MINILM_DIR) if settings.OTTO_MINILM_DIR else None,
        embed_threads=settings.OTTO_EMBED_THREADS or None,
        hub_offline=settings.OTTO_HUB_OFFLINE,
    )


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import (
            checks,  # noqa: F401  (registers the system checks)
            providers,  # noqa: F401  (registers the hosted embedding backends)
        )

        config.configure(engine_config())
