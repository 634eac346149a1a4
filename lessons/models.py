"""Error memory (lessons): a tool failure and the action that resolved it, kept for 90 days.

A record lives while `expires_at` is in the future. Every lookup that returns it restarts the clock,
so a fix that keeps being useful stays; one nobody needs any more expires and is purged.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

# docs/decisions.md: records are kept 90 days from creation or from their last hit.
LESSON_TTL = timedelta(days=90)


def new_expiry(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + LESSON_TTL


class ErrorRecordQuerySet(models.QuerySet["ErrorRecord"]):
    def for_user(self, user) -> ErrorRecordQuerySet:
        return self.filter(user=user)

    def live(self, now: datetime | None = None) -> ErrorRecordQuerySet:
        """Records whose TTL has not run out: expired rows are never returned, purged or not."""
        return self.filter(expires_at__gt=now or timezone.now())

    def expired(self, now: datetime | None = None) -> ErrorRecordQuerySet:
        return self.filter(expires_at__lte=now or timezone.now())

    def of_tool(self, tool: str) -> ErrorRecordQuerySet:
        return self.filter(tool__iexact=tool) if tool else self


class ErrorRecord(models.Model):
    """One resolved tool failure: what failed, what fixed it, and for how long to remember it.

    `embedding` is the float32 vector of "tool: error", stamped with `embedding_model`; a record
    written while no embedding model was available has none and is found by keyword.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="error_records")
    tool = models.CharField(max_length=200)
    error = models.TextField()
    action = models.TextField()
    context = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(default=new_expiry)
    hits = models.PositiveIntegerField(default=0)
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    embedding = models.BinaryField(null=True, blank=True)

    objects = ErrorRecordQuerySet.as_manager()

    class Meta:
        indexes = [
            models.Index(fields=["user", "tool", "expires_at"]),
            models.Index(fields=["expires_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.tool}: {self.error[:60]}"
