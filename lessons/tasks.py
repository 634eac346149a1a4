"""Celery tasks of error memory: thin, named, safe to run twice."""

from __future__ import annotations

import logging

from celery import shared_task

from . import services

log = logging.getLogger(__name__)


@shared_task(name="lessons.purge_expired")
def purge_expired() -> int:
    """Delete expired error records (run daily by Celery beat); return how many were deleted."""
    deleted = services.purge_expired_errors()
    log.info("purged %d expired error records", deleted)
    return deleted
