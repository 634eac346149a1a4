"""Celery tasks: thin, named, ids as arguments, each calling one service. Safe to run twice."""

from __future__ import annotations

import logging
import threading

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, close_old_connections

from . import services

log = logging.getLogger(__name__)


@shared_task(name="memory.compact_session", bind=True, max_retries=None)
def compact_session_task(self, *, job_id: str) -> None:
    try:
        services.run_compaction_job(job_id=job_id, worker=services.worker_name())
    except services.JobBusy:
        # Another job of this session is running; the claim says so, we come back shortly.
        raise self.retry(countdown=1) from None


@shared_task(name="memory.reembed_session", bind=True, max_retries=None)
def reembed_session_task(self, *, job_id: str) -> None:
    try:
        # Compactions first: one user's queue of re-embeddings never holds up another's session.
        services.run_due_compactions(worker=services.worker_name())
        services.run_reembed_job(job_id=job_id, worker=services.worker_name())
    except services.JobBusy:
        raise self.retry(countdown=1) from None


@shared_task(name="memory.store_context", bind=True, max_retries=None)
def store_context_task(self, *, job_id: str) -> None:
    try:
        services.run_due_compactions(worker=services.worker_name())
        services.run_store_job(job_id=job_id, worker=services.worker_name())
    except services.JobBusy:
        raise self.retry(countdown=1) from None


@shared_task(name="memory.embed_session", bind=True, ignore_result=True, max_retries=5)
def embed_session_task(self, *, session_pk: int, kind: str) -> None:
    try:
        services.embed_pending(session_pk=session_pk, kind=kind)
    except DatabaseError as exc:
        # Every in-process retry failed (a writer held the lock for minutes): later, and the
        # periodic sweep catches whatever is still without a vector after that.
        raise self.retry(countdown=60, exc=exc) from None


@shared_task(name="memory.embed_missing", ignore_result=True)
def embed_missing_task() -> None:
    services.embed_missing()


def _sweep_forever(every: float) -> None:
    """The worker's periodic sweep (no beat process needed): every turn ends with a vector."""
    stop = threading.Event()
    while not stop.wait(every):
        try:
            count = services.embed_missing()
            if count:
                log.info("sweep: %d vector(s) written", count)
        except Exception:
            log.exception("sweep failed; trying again in %s s", every)
        finally:
            close_old_connections()


@worker_ready.connect
def requeue_after_restart(sender=None, **kwargs) -> None:
    """A worker that starts resends unfinished jobs (a killed worker's job completes once) and
    starts its vector sweep."""
    try:
        count = services.with_db_retry("resend unfinished jobs", services.requeue_unfinished_jobs)
    except DatabaseError:
        log.exception("unfinished jobs not resent")
    else:
        if count:
            log.info("resent %d unfinished job(s)", count)
    close_old_connections()
    if settings.OTTO_EMBED_SWEEP_SECONDS > 0:
        threading.Thread(
            target=_sweep_forever, args=(settings.OTTO_EMBED_SWEEP_SECONDS,), name="embed-sweep", daemon=True
        ).start()
