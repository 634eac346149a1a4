"""Sending the worker's Celery tasks by name, at once or when the transaction commits."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ottoweb.celery import app as celery_app

# The worker's task for each kind of job (memory/tasks.py registers them under these names). Jobs are
# sent by name: the task module imports the services, so the services never import it.
JOB_TASKS = {
    "compact": "memory.compact_session",
    "reembed": "memory.reembed_session",
    "store_context": "memory.store_context",
}


def send_task(task: str, *, countdown: float | None = None, **kwargs: Any) -> None:
    """Send the task named `task` to the worker with `kwargs`."""
    celery_app.send_task(task, kwargs=kwargs, countdown=countdown)


def send_on_commit(task: str, **kwargs: Any) -> None:
    """Send `task` once the transaction commits; a broker that cannot take it is logged, not raised.

    The job row is committed either way and a starting worker resends unfinished jobs, so a full
    disk under the broker (or a broker outage) never turns a committed write into a 500.
    """
    transaction.on_commit(lambda: send_task(task, **kwargs), robust=True)
