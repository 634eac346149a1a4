"""The Celery app. Embedded default: kombu's filesystem broker under OTTO_DATA_DIR (no server)."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import task_postrun, worker_init

from ottoweb.heap import release_memory, tune_malloc

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ottoweb.settings")

app = Celery("ottoweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _tune_malloc(**_: Any) -> None:
    # Before the pool's threads start (ottoweb/heap.py says why).
    tune_malloc()


@task_postrun.connect
def _release_memory(**_: Any) -> None:
    # An embedding batch or a stored transcript leaves megabytes freed on the heap; a few
    # milliseconds hand them back, so the worker returns near its idle size between tasks.
    release_memory()
