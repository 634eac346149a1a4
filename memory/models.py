"""Sessions, their live tiers, chunks and bullets.

The live tiers are rows, not process state: every append writes its Item row (tier "x" or "y")
in the same transaction that acknowledges it, so a restart resumes exactly where it stopped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

TIER_X, TIER_Y, TIER_ARCHIVED = "x", "y", "a"


def local_time(moment: datetime, offset_minutes: int) -> datetime:
    """`moment` (aware) shown in the fixed offset `offset_minutes` east of UTC."""
    return moment.astimezone(dt_timezone(timedelta(minutes=offset_minutes)))


def offset_minutes(moment: datetime) -> int:
    """The UTC offset of an aware `moment`, in whole minutes."""
    offset = moment.utcoffset()
    return 0 if offset is None else int(offset.total_seconds() // 60)


class SessionQuerySet(models.QuerySet["Session"]):
    def for_user(self, user) -> SessionQuerySet:
        return self.filter(user=user)

    def with_totals(self) -> SessionQuerySet:
        """Annotate the history tiers' token totals and generation (one query for a whole list)."""

        def total(rows: models.QuerySet) -> Coalesce:
            summed = rows.values("session").annotate(s=Sum("tokens")).values("s")
            return Coalesce(Subquery(summed), 0)

        items = Item.objects.filter(session=OuterRef("pk"), kind="history")
        bullets = Bullet.objects.filter(session=OuterRef("pk"), kind="history", superseded=False)
        state = TierState.objects.filter(session=OuterRef("pk"), kind="history")
        return self.annotate(
            x_tokens=total(items.filter(tier=TIER_X)),
            y_raw_tokens=total(items.filter(tier=TIER_Y)),
            bullet_tokens=total(bullets),
            generation=Coalesce(Subquery(state.values("generation")[:1]), 0),
        )

    def matching(self, q: str) -> SessionQuerySet:
        if not q:
            return self
        return self.filter(Q(sid__icontains=q) | Q(title__icontains=q) | Q(workspace__icontains=q))


class Session(models.Model):
    """A conversation's memory. `sid` is the public id, unique per user (so ids never leak)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_sessions"
    )
    sid = models.CharField(max_length=128)
    title = models.CharField(max_length=200, blank=True, default="")
    workspace = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    turns = models.PositiveIntegerField(default=0)
    x_budget = models.PositiveIntegerField()
    y_budget = models.PositiveIntegerField()
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    # The share of Y the person's verbatim turns may fill; NULL: OTTO_PROTECTED_SHARE (issue 15).
    protected_share = models.FloatField(null=True, blank=True)
    # Not columns: what `SessionQuerySet.with_totals()` annotates, on its rows only.
    generation: int
    x_tokens: int
    y_raw_tokens: int
    bullet_tokens: int

    objects = SessionQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "sid"], name="session_sid_unique_per_user")]
        indexes = [models.Index(fields=["user", "-updated_at"])]

    def __str__(self) -> str:
        return self.sid


class TierState(models.Model):
    """Per session and kind: the compaction generation and the next item position."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="tier_states")
    kind = models.CharField(max_length=16)
    generation = models.PositiveIntegerField(default=0)
    next_position = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "kind"], name="tierstate_unique")]


class Chunk(models.Model):
    """Raw text, content-addressed within a session: (session, sha256) is unique, never rewritten."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="chunks")
    hash = models.CharField(max_length=64)
    text = models.TextField()
    tokens = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "hash"], name="chunk_hash_unique")]


class ItemQuerySet(models.QuerySet["Item"]):
    def of_kind(self, session: Session, kind: str) -> ItemQuerySet:
        return self.filter(session=session, kind=kind)

    def in_tier(self, tier: str) -> ItemQuerySet:
        return self.filter(tier=tier)

    def pending(self) -> ItemQuerySet:
        return self.filter(tier__in=(TIER_X, TIER_Y))


class Item(models.Model):
    """One appended turn at its position. `tier` is x or y while live, a once archived."""

    TIERS = [(TIER_X, "X"), (TIER_Y, "Y raw"), (TIER_ARCHIVED, "archived")]

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=16)
    position = models.PositiveBigIntegerField()
    chunk = models.ForeignKey(Chunk, on_delete=models.PROTECT, related_name="items")
    role = models.CharField(max_length=16)
    tier = models.CharField(max_length=1, choices=TIERS)
    protected = models.BooleanField(default=False)
    # Kept verbatim in the prompt view until unpinned (a pinned bullet once compacted).
    pinned = models.BooleanField(default=False)
    tokens = models.PositiveIntegerField()
    # The caller's own JSON object, stored and returned verbatim, never ranked.
    meta = models.JSONField(default=dict, blank=True)
    # Who said it and when it happened (ranking reads both: the speaker, and the date beside the
    # turn). `occurred_at` is stored in UTC; `utc_offset` (minutes) keeps the offset it was sent
    # with, so it comes back as sent and its date is indexed as the speaker's own day.
    name = models.CharField(max_length=64, blank=True, default="")
    occurred_at = models.DateTimeField(default=timezone.now)
    utc_offset = models.SmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ItemQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "kind", "position"], name="item_position_unique")
        ]
        indexes = [
            models.Index(fields=["session", "kind", "tier", "position"]),
            # Recall's `since` / `until` bounds.
            models.Index(fields=["session", "kind", "occurred_at"], name="item_occurred_at"),
        ]

    @property
    def when(self) -> datetime:
        """`occurred_at` in the offset it was sent with."""
        return local_time(self.occurred_at, self.utc_offset)


class BulletQuerySet(models.QuerySet["Bullet"]):
    def of_kind(self, session: Session, kind: str) -> BulletQuerySet:
        return self.filter(session=session, kind=kind)

    def live(self) -> BulletQuerySet:
        return self.filter(superseded=False)


class Bullet(models.Model):
    """A summary line of one generation and the chunk hashes it cites. Superseded rows are kept."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="bullets")
    kind = models.CharField(max_length=16)
    generation = models.PositiveIntegerField()
    text = models.TextField()
    hash_refs = models.JSONField(default=list)
    tokens = models.PositiveIntegerField()
    first_position = models.PositiveBigIntegerField()
    protected = models.BooleanField(default=False)
    role = models.CharField(max_length=16, blank=True, default="")
    pinned = models.BooleanField(default=False)
    # Who said it and when, for a bullet that is one turn (protected, pinned, a quote): the turn's
    # own, in the offset it was sent with; for a summary line, the time of its earliest source.
    name = models.CharField(max_length=64, blank=True, default="")
    occurred_at = models.DateTimeField(null=True, blank=True)
    utc_offset = models.SmallIntegerField(default=0)
    superseded = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = BulletQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["session", "kind", "superseded", "first_position"])]

    @property
    def when(self) -> datetime | None:
        """`occurred_at` in the offset it was sent with."""
        return None if self.occurred_at is None else local_time(self.occurred_at, self.utc_offset)


class ItemVector(models.Model):
    """An item's embedding, stamped with the model that made it (float32 bytes, L2-normalised).

    On SQLite the same vector is mirrored into a sqlite-vec table for KNN (memory/storage/vectors.py).
    """

    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="vector")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="vectors")
    kind = models.CharField(max_length=16)
    model = models.CharField(max_length=200)
    dim = models.PositiveIntegerField()
    vector = models.BinaryField()

    class Meta:
        indexes = [models.Index(fields=["session", "kind", "model"])]


class Setting(models.Model):
    """Database-wide choices made once and recorded (the embedding model, docs/decisions.md, foundation 3)."""

    key = models.CharField(max_length=100, primary_key=True)
    value = models.TextField()
    updated_at = models.DateTimeField(default=timezone.now)


class JobQuerySet(models.QuerySet["Job"]):
    def for_user(self, user) -> JobQuerySet:
        return self.filter(user=user)

    def unfinished(self) -> JobQuerySet:
        return self.filter(status__in=(Job.QUEUED, Job.RUNNING))


class Job(models.Model):
    """A background job's progress, polled by the API and the dashboard."""

    QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED)]

    id = models.CharField(max_length=32, primary_key=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_jobs")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, null=True, blank=True, related_name="jobs")
    kind = models.CharField(max_length=32)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    progress = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    # "host:pid" of the worker running it; with claimed_at (bumped on progress) this is the claim.
    claimed_by = models.CharField(max_length=200, blank=True, default="")
    claimed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["session", "kind", "status"])]


class JobPayload(models.Model):
    """A job's input too large for `params`: the turns a `/runs/fit` evicted, for the worker to
    store and embed. Committed with the job in the request's one short transaction, so the
    acknowledged turns survive any crash; deleted once they are stored."""

    job = models.OneToOneField(Job, on_delete=models.CASCADE, primary_key=True, related_name="payload")
    items = models.JSONField(default=list)


class ScopedMemoryQuerySet(models.QuerySet["ScopedMemory"]):
    def in_scope(self, user, project_key: str) -> ScopedMemoryQuerySet:
        return self.filter(user=user, project_key=project_key)


class ScopedMemory(models.Model):
    """A note an agent chose to keep, addressed by (user, app+domain) or (user, conversation).

    `project_key` is the resolved address handed back to the caller; the user part always comes
    from the authenticated token, never from the request (docs/decisions.md).
    """

    APP, CONVERSATION = "app", "conversation"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scoped_memories"
    )
    mode = models.CharField(max_length=16, choices=[(APP, APP), (CONVERSATION, CONVERSATION)])
    project_key = models.CharField(max_length=600)
    # NULL, not "", means "no key": unkeyed writes insert, and NULLs never collide in the constraint.
    key = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    content = models.TextField()
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    embedding = models.BinaryField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = ScopedMemoryQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "project_key", "key"],
                condition=Q(key__isnull=False),
                name="scoped_memory_key_unique",
            )
        ]
        indexes = [models.Index(fields=["user", "project_key", "-updated_at"])]


class LearnedWindow(models.Model):
    """A context-window limit learned from a provider's overflow error (in-run compaction).

    It belongs to the user whose run taught it: a token holder lowers the window for their own
    runs, never for another user's (issue 15).
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="learned_windows"
    )
    model = models.CharField(max_length=200)
    window = models.PositiveIntegerField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "model"], name="learned_window_unique_per_user")
        ]
