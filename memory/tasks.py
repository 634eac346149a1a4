"""Celery tasks: thin, named, ids as arguments, each calling one service. Safe to run twice."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from . import services

log = logging.getLogger(__name__)


@shared_task(name="memory.compact_session", bind=True, max_retries=None)
def compact_session_task(self, *, job_id: str) -> None:  # type: ignore[no-untyped-def]
    try:
        services.run_compaction_job(job_id=job_id, worker=services.worker_name())
    except services.JobBusy:
        # Another job of this session is running; the claim says so, we come back shortly.
        raise self.retry(countdown=1) from None


@shared_task(name="memory.reembed_session", bind=True, max_retries=None)
def reembed_session_task(self, *, job_id: str) -> None:  # type: ignore[no-untyped-def]
    try:
        services.run_reembed_job(job_id=job_id, worker=services.worker_name())
    except services.JobBusy:
        raise self.retry(countdown=1) from None


@shared_task(name="memory.embed_session", ignore_result=True)
def embed_session_task(*, session_pk: int, kind: str) -> None:
    services.embed_pending(session_pk=session_pk, kind=kind)


@worker_ready.connect
def requeue_after_restart(sender=None, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """A worker that starts resends unfinished jobs: a killed worker's job completes once."""
    count = services.requeue_unfinished_jobs()
    if count:
        log.info("resent %d unfinished job(s)", count)
