"""API tokens, the audit trail and failed sign-ins: who may call, and what they did.

The tables keep the names they were created with (`memory_apitoken`, `memory_auditentry`,
`memory_authfailure`): the models moved here from memory without their rows moving
(accounts/migrations/0001_initial.py).
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A bearer token for the API. Only its sha256 is stored; the token itself is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    PREFIX = "otto_"

    class Meta:
        db_table = "memory_apitoken"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()

    @classmethod
    def issue(cls, user, name: str) -> tuple[ApiToken, str]:
        """Create a token for `user`; return the row and the plain token (never stored)."""
        plain = cls.PREFIX + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name, digest=cls.digest_of(plain), prefix=plain[:12])
        return row, plain


class AuditEntryQuerySet(models.QuerySet["AuditEntry"]):
    def for_user(self, user, session: str = "") -> AuditEntryQuerySet:
        """The user's rows; `session` narrows them to one session id."""
        rows = self.filter(user=user)
        return rows.filter(session_sid=session) if session else rows


class AuditEntry(models.Model):
    """One state-changing request, appended by the server after it answered (accounts/audit.py).

    Kept apart from memory (docs/decisions.md): memory is what an agent chose to keep; this is what it
    could not avoid producing. Nothing in the API or dashboard edits or deletes these rows.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # SET_NULL: the trail outlives the user; `username` keeps who it was.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    username = models.CharField(max_length=150, blank=True, default="")
    token_prefix = models.CharField(max_length=12, blank=True, default="")
    channel = models.CharField(max_length=16)  # "api", "dashboard" or "mcp"
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=500)
    action = models.CharField(max_length=100)
    object_ref = models.CharField(max_length=300, blank=True, default="")
    session_sid = models.CharField(max_length=128, blank=True, default="", db_index=True)
    status = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=16)  # "ok", "refused", "error"

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        db_table = "memory_auditentry"
        indexes = [
            models.Index(fields=["user", "-created_at"]),
            models.Index(fields=["user", "session_sid", "-created_at"]),
        ]


class AuthFailure(models.Model):
    """Failed sign-ins of one key — a (client address, username) pair, or an address alone — and its
    lock-out (accounts/throttle.py; no account is ever locked as such).

    Written only when an attempt fails (and deleted when a password login succeeds after
    failures): a successful request writes nothing here.
    """

    key = models.CharField(max_length=200, unique=True)
    failures = models.PositiveIntegerField(default=0)
    last_failure_at = models.DateTimeField(db_index=True)
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "memory_authfailure"
