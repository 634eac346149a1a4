"""The Celery app. Embedded default: kombu's filesystem broker under OTTO_DATA_DIR (no server)."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ottoweb.settings")

app = Celery("ottoweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
