"""Which embedding model this database uses: chosen once, recorded, never switched silently.

The first use records OTTO_EMBEDDING_MODEL (default `minilm`). If the setting later names another
model, the recorded one stays in force and a system check says how to switch (re-embed).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import IntegrityError, transaction

from .engine.embeddings import Embedder, canonical, get_embedder
from .models import Setting

log = logging.getLogger(__name__)

SETTING_KEY = "embedding_model"


def database_model() -> str:
    """The recorded embedding spec of this database, recording the configured one on first use."""
    row = Setting.objects.filter(key=SETTING_KEY).first()
    if row is not None:
        return row.value
    try:
        with transaction.atomic():
            Setting.objects.create(key=SETTING_KEY, value=settings.OTTO_EMBEDDING_MODEL)
    except IntegrityError:
        pass
    return Setting.objects.get(key=SETTING_KEY).value


def database_stamp() -> str:
    return canonical(database_model())


def embedder(spec: str | None = None) -> Embedder:
    """The loaded backend for `spec` or the database's model. Raises EmbeddingUnavailable."""
    return get_embedder(spec or database_model())


def configured_differs() -> str | None:
    """A sentence when OTTO_EMBEDDING_MODEL names another model than the recorded one."""
    row = Setting.objects.filter(key=SETTING_KEY).first()
    if row is None or canonical(row.value) == canonical(settings.OTTO_EMBEDDING_MODEL):
        return None
    return (
        f"OTTO_EMBEDDING_MODEL is {settings.OTTO_EMBEDDING_MODEL!r} but this database records "
        f"{row.value!r}; the recorded model stays in force until sessions are re-embedded "
        f"(manage.py reembed --all --model {settings.OTTO_EMBEDDING_MODEL})"
    )
