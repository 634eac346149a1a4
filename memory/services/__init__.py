"""Every write to memory, one function each, each in a transaction.

The API, the dashboard, Celery tasks and management commands all call these; nothing else writes.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from ottoweb.errors import Invalid, TooLarge, TooManyJobs

from .. import importing
from ..engine import tokens as tok
from ..engine.embeddings import EmbeddingUnavailable, canonical
from ..engine.hashing import content_hash
from ..engine.queue import TieredQueue
from ..engine.types import KINDS, ROLES, Draft, meta_problem, name_problem
from ..models import Bullet, Item, ItemVector, Job, JobPayload, Session, TierState, offset_minutes
from ..store import DjangoTierStore
from .compaction import compact_session, queue_for, summarizer_for
from .dispatch import JOB_TASKS, send_on_commit, send_task
from .embedding import (
    EMBED_BATCH,
    EMBED_DELAY,
    RECALL_EMBED_LIMIT,
    RECALL_EMBED_WINDOW,
    embed_items,
    embed_missing,
    embed_pending,
    embed_quietly,
    embed_stragglers,
    reembed_session,
    schedule_embedding,
    session_embedder,
)
from .retry import DB_RETRY_PAUSES, with_db_retry
from .sessions import UNADDRESSABLE_IDS, check_session_id, create_session, delete_session, reset_session
from .tokens import issue_token, revoke_token

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NewItem:
    role: str
    text: str
    kind: str = "history"
    protected: bool | None = None
    meta: dict[str, Any] | None = None
    # Who said it, and when it happened (None: now, its arrival).
    name: str = ""
    occurred_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    hash: str
    kind: str
    position: int
    compaction: dict[str, Any] | None


def _check_item(item: NewItem, index: int | None = None) -> None:
    where = "" if index is None else f"items[{index}]."
    if item.role not in ROLES:
        raise Invalid(f"{where}role must be one of {', '.join(ROLES)}", field=f"{where}role")
    if item.kind not in KINDS:
        raise Invalid(f"{where}kind must be one of {', '.join(KINDS)}", field=f"{where}kind")
    if not item.text or not item.text.strip():
        raise Invalid(f"{where}text must not be empty", field=f"{where}text")
    if len(item.text) > settings.OTTO_MAX_ITEM_CHARS:
        raise Invalid(
            f"{where}text is {len(item.text):,} characters; the limit is {settings.OTTO_MAX_ITEM_CHARS:,}",
            field=f"{where}text",
        )
    problem = name_problem(item.name)
    if problem:
        raise Invalid(f"{where}name {problem}", field=f"{where}name")
    if item.occurred_at is not None and item.occurred_at.utcoffset() is None:
        raise Invalid(f"{where}occurred_at needs an offset (Z or +hh:mm)", field=f"{where}occurred_at")
    problem = meta_problem(item.meta)
    if problem:
        raise Invalid(f"{where}meta {problem}", field=f"{where}meta")


def _text_bytes(item: NewItem) -> int:
    return len(item.text.encode("utf-8", "surrogatepass"))


def check_batch(items: Sequence[NewItem]) -> None:
    """TooLarge when a batch is beyond OTTO_MAX_BATCH_ITEMS items or OTTO_MAX_BATCH_BYTES of text.

    A batch is one transaction, and on SQLite every other writer waits for it: these keep it short.
    """
    count, limit = len(items), settings.OTTO_MAX_BATCH_ITEMS
    if count > limit:
        raise TooLarge(
            f"the batch has {count:,} items; the limit is {limit:,} (OTTO_MAX_BATCH_ITEMS): send it in parts",
            field="items",
        )
    size, limit = sum(_text_bytes(i) for i in items), settings.OTTO_MAX_BATCH_BYTES
    if size > limit:
        raise TooLarge(
            f"the batch's texts are {size:,} bytes; the limit is {limit:,} (OTTO_MAX_BATCH_BYTES): "
            "send it in parts",
            field="items",
        )


def bounded_batches(items: Sequence[NewItem]) -> list[list[NewItem]]:
    """`items` in order, cut into batches `check_batch` accepts (an item alone beyond the byte
    limit, which a single append may be, goes alone)."""
    batches: list[list[NewItem]] = []
    size = 0
    for item in items:
        bytes_ = _text_bytes(item)
        if (
            not batches
            or len(batches[-1]) >= settings.OTTO_MAX_BATCH_ITEMS
            or size + bytes_ > settings.OTTO_MAX_BATCH_BYTES
        ):
            batches.append([])
            size = 0
        batches[-1].append(item)
        size += bytes_
    return batches


def append_items(*, session: Session, items: Sequence[NewItem]) -> list[AppendOutcome]:
    """Append items in order, all or nothing; compact Y when an append overflows it.

    Every item is validated before anything is written. Each item is mirrored in the database in
    the transaction that acknowledges it, so an acknowledged item survives any crash.
    """
    for index, item in enumerate(items):
        _check_item(item, index if len(items) > 1 else None)
    outcomes: list[AppendOutcome] = []
    with transaction.atomic():
        queues: dict[str, TieredQueue] = {}
        history_turns = 0
        for item in items:
            queue = queues.get(item.kind) or queues.setdefault(item.kind, queue_for(session, item.kind))
            appended = queue.append(
                item.role,
                item.text,
                protected=item.protected,
                meta=item.meta,
                name=item.name,
                occurred_at=item.occurred_at,
            )
            compaction = None
            if appended.needs_compaction:
                compaction = _compact_now(session, queue)
            history_turns += item.kind == "history"
            outcomes.append(
                AppendOutcome(
                    hash=appended.item.hash,
                    kind=item.kind,
                    position=appended.item.position,
                    compaction=compaction,
                )
            )
        Session.objects.filter(pk=session.pk).update(
            turns=F("turns") + history_turns, updated_at=timezone.now()
        )
        for kind in queues:
            schedule_embedding(session, kind)
    return outcomes


def _compact_now(session: Session, queue: TieredQueue) -> dict[str, Any] | None:
    """Hand the compaction an append triggered to the worker, or run it inline (OTTO_COMPACTION)."""
    if settings.OTTO_COMPACTION == "job":
        return {"job_id": enqueue_compaction(session=session).id}
    compact_session(session=session, kind=queue.kind, queue=queue)
    transaction.on_commit(lambda: embed_quietly(session, queue.kind))
    return None


# --- background jobs ----------------------------------------------------------------------------

# A running job whose worker has not shown a sign of life (progress) for this long may be taken over.
JOB_LEASE = timedelta(minutes=10)
# A compaction job keeps compacting while Y is still over budget, but not forever.
MAX_ROUNDS = 8


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim_is_stale(job: Job) -> bool:
    if job.claimed_at is None or timezone.now() - job.claimed_at > JOB_LEASE:
        return True
    host, _, pid = job.claimed_by.rpartition(":")
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True  # its worker on this machine is gone (killed, crashed)
        except PermissionError:
            return False
    return False


def _job_is_dead(job: Job) -> bool:
    """A queued job no worker took within the lease (its message lost), or a running one whose
    worker is gone or silent (`_claim_is_stale`)."""
    if job.status == Job.QUEUED:
        return timezone.now() - job.created_at > JOB_LEASE
    return _claim_is_stale(job)


def _new_job(*, session: Session, kind: str, params: dict[str, Any] | None = None) -> Job:
    return Job.objects.create(
        id=secrets.token_hex(8), user_id=session.user_id, session=session, kind=kind, params=params or {}
    )


def enqueue_compaction(*, session: Session, everything: bool = False) -> Job:
    """A compaction job for the session (the unfinished one if there is one), sent on commit.

    `everything`: the manual "compact now" — X moves into Y and Y is compacted even under budget
    (a queued job takes that on; a running one is followed by a new one).
    """
    params = {"everything": True} if everything else {}
    existing = Job.objects.filter(session=session, kind="compact").unfinished().first()
    if existing is not None and not _job_is_dead(existing):
        if not everything or existing.params.get("everything"):
            return existing
        if Job.objects.filter(pk=existing.pk, status=Job.QUEUED).update(params={**existing.params, **params}):
            existing.params = {**existing.params, **params}
            return existing
        existing = None  # running: the compaction asked for now follows it
    job = _new_job(session=session, kind="compact", params=params)
    if existing is not None:
        # Handing it back would stall the session for good: every later overflow would answer the
        # same dead id and nothing would compact again. It is failed with its reason instead.
        Job.objects.filter(pk=existing.pk, status=existing.status).update(
            status=Job.FAILED,
            error=f"abandoned: no worker finished it within {JOB_LEASE}; job {job.id} replaces it",
            finished_at=timezone.now(),
        )
    send_on_commit(JOB_TASKS["compact"], job_id=job.id)
    return job


def _check_model_spec(model: str) -> None:
    """Refuse a model spec that names nothing, or a folder outside OTTO_MODEL_DIRS.

    Any token holder can name a model: a free folder would let them make the worker load files
    from anywhere on its machine, and an error quoting the path would tell them what exists there.
    The answer names the model, never a path.
    """
    from ..engine.embeddings import build

    name, _, folder = model.partition("@")
    if folder and model.startswith("fastembed:"):
        target = os.path.realpath(folder)
        allowed = [os.path.realpath(d) for d in settings.OTTO_MODEL_DIRS]
        if not any(target == d or target.startswith(d + os.sep) for d in allowed):
            raise Invalid(
                f"model {name!r}: its folder is not one of the configured model folders (OTTO_MODEL_DIRS)",
                field="model",
            )
    try:
        canonical(model)
        build(model)
    except ValueError:
        raise Invalid(f"model {name!r} is not a model this server knows", field="model") from None


def enqueue_reembed(*, session: Session, model: str | None = None) -> Job:
    """A re-embedding job for the session, sent on commit. Refuses a model that names nothing.

    At most one queued re-embedding per session: a second request answers the queued job (with
    the model it now asks for). Beyond OTTO_MAX_QUEUED_JOBS queued jobs of the user: TooManyJobs.
    """
    if model:
        _check_model_spec(model)
    params = {"model": model} if model else {}
    with transaction.atomic():
        queued = Job.objects.filter(session=session, kind="reembed", status=Job.QUEUED).first()
        if queued is not None and not _job_is_dead(queued):
            if queued.params != params:
                Job.objects.filter(pk=queued.pk, status=Job.QUEUED).update(params=params)
                queued.params = params
            return queued
        _check_queue_room(session)
        job = _new_job(session=session, kind="reembed", params=params)
        send_on_commit(JOB_TASKS["reembed"], job_id=job.id)
    return job


def _check_queue_room(session: Session) -> None:
    limit = settings.OTTO_MAX_QUEUED_JOBS
    waiting = Job.objects.filter(user_id=session.user_id, status=Job.QUEUED).count()
    if waiting >= limit:
        raise TooManyJobs(
            f"{waiting} of your jobs are waiting for the worker (the limit is {limit}); "
            "try again once some have run"
        )


def store_context_items(*, session: Session, items: Sequence[NewItem]) -> int:
    """Append the context items not already stored, in batches `check_batch` accepts (each its own
    short transaction); return how many were new.

    Idempotent: an item whose text the session's context tier holds is skipped (chunks are
    content-addressed), so a second run, or a resent transcript, stores nothing twice.
    """
    stored = 0
    for batch in bounded_batches(items):
        hashes = [content_hash(i.text) for i in batch]
        held = set(
            Item.objects.filter(session=session, kind="context", chunk__hash__in=hashes).values_list(
                "chunk__hash", flat=True
            )
        )
        fresh = [i for i, h in zip(batch, hashes, strict=True) if h not in held]
        if fresh:
            append_items(session=session, items=fresh)
        stored += len(fresh)
    return stored


def enqueue_context_store(*, session: Session, items: Sequence[NewItem]) -> Job:
    """A job that stores `items` in the session's context tier and embeds them, sent on commit.

    The request's whole write is one short transaction: the job row and its payload (the raw
    items), so the turns are durable once acknowledged; the worker does the slow part (the rows,
    the keyword index, the vectors) in short transactions of its own. TooManyJobs beyond
    OTTO_MAX_QUEUED_JOBS.
    """
    with transaction.atomic():
        _check_queue_room(session)
        job = _new_job(session=session, kind="store_context")
        JobPayload.objects.create(
            job=job,
            items=[{"role": i.role, "text": i.text, "meta": i.meta or {}, "name": i.name} for i in items],
        )
        send_on_commit(JOB_TASKS["store_context"], job_id=job.id)
    return job


def run_store_job(*, job_id: str, worker: str) -> None:
    """Store a `/runs/fit`'s evicted turns (`enqueue_context_store`), then write their vectors.

    Between batches the worker runs every queued compaction, so one user's large fit never holds
    up another user's session for more than a batch. Safe to run twice (`store_context_items`);
    the payload is deleted when the job is done.
    """

    def store(job: Job, session: Session) -> None:
        payload = with_db_retry(
            f"job {job.id}: load",
            lambda: JobPayload.objects.filter(job_id=job.id).values_list("items", flat=True).first(),
        )
        items = [NewItem(kind="context", **entry) for entry in payload or []]
        if not items:
            return
        batches = bounded_batches(items)
        with_db_retry(f"job {job.id}: progress", lambda: _progress(job, 0, len(batches)))
        for done, batch in enumerate(batches, start=1):
            with_db_retry(
                f"job {job.id}: store", lambda b=batch: store_context_items(session=session, items=b)
            )
            with_db_retry(f"job {job.id}: progress", lambda n=done: _progress(job, n))
            run_due_compactions(worker=worker)
        _write_vectors(job, session, "context")

    def finish(job: Job) -> None:
        with transaction.atomic():
            JobPayload.objects.filter(job_id=job.id).delete()
            _finish(job, Job.DONE)

    _run_job(job_id, worker, store, finish)


def run_due_compactions(*, worker: str, limit: int = 100) -> int:
    """Run the queued compaction jobs of every user, oldest first, before a long job starts.

    Compactions are what keep a session inside its budget, and each is short; a re-embedding can
    take minutes and one user may queue many. Whatever the broker's order, a compaction thus
    waits for at most the one job that is running when it is queued. Safe beside other workers:
    each is claimed, so one runs it and the others skip it.
    """
    ids = with_db_retry(
        "due compactions",
        lambda: list(
            Job.objects.filter(kind="compact", status=Job.QUEUED)
            .order_by("created_at")
            .values_list("pk", flat=True)[:limit]
        ),
    )
    ran = 0
    for job_id in ids:
        try:
            run_compaction_job(job_id=job_id, worker=worker)
            ran += 1
        except JobBusy:
            continue  # its session is busy with another job: its own message comes back for it
    return ran


class JobBusy(Exception):
    """Another job of the same session is running; try again shortly."""


def claim_job(*, job_id: str, worker: str) -> Job | None:
    """Take the job for `worker`, or None when it is finished or someone alive holds it.

    The claim is a conditional UPDATE in the database, so it holds across processes and machines;
    no two jobs of one session run at once (JobBusy when another one is running).
    """
    with transaction.atomic():
        job = Job.objects.filter(pk=job_id).first()
        if job is None or job.status in (Job.DONE, Job.FAILED):
            return None
        if job.status == Job.RUNNING and not _claim_is_stale(job):
            return None
        if job.session_id is not None:
            # On PostgreSQL this row lock serialises claims per session; SQLite serialises writers anyway.
            list(Session.objects.select_for_update().filter(pk=job.session_id).values_list("pk"))
            others = Job.objects.filter(session_id=job.session_id, status=Job.RUNNING).exclude(pk=job.pk)
            if any(not _claim_is_stale(other) for other in others):
                raise JobBusy(job_id)
        taken = Job.objects.filter(
            pk=job.pk, status=job.status, claimed_by=job.claimed_by, claimed_at=job.claimed_at
        ).update(status=Job.RUNNING, claimed_by=worker, claimed_at=timezone.now(), attempts=F("attempts") + 1)
        if not taken:
            return None
        job.refresh_from_db()
        return job


def _progress(job: Job, done: int, total: int | None = None) -> None:
    fields: dict[str, Any] = {"progress": done, "claimed_at": timezone.now()}
    if total is not None:
        fields["total"] = total
    Job.objects.filter(pk=job.pk, claimed_by=job.claimed_by).update(**fields)


def _finish(job: Job, status: str, error: str = "") -> None:
    Job.objects.filter(pk=job.pk).update(status=status, error=error[:2000], finished_at=timezone.now())


def _fail(job: Job, exc: BaseException) -> None:
    """Mark the job failed with its reason; a job that cannot even be marked stays for the dead-job
    rule of `enqueue_compaction` (and `requeue_unfinished_jobs`) to find."""
    try:
        with_db_retry(
            f"job {job.id}: finish", lambda: _finish(job, Job.FAILED, f"{type(exc).__name__}: {exc}")
        )
    except DatabaseError:
        log.exception("job %s: could not be marked failed", job.id)


def _load_session(job: Job) -> Session | None:
    return with_db_retry(f"job {job.id}: load", lambda: Session.objects.filter(pk=job.session_id).first())


def _run_job(
    job_id: str,
    worker: str,
    body: Callable[[Job, Session], None],
    finish: Callable[[Job], None] | None = None,
) -> None:
    """The frame every job runs in: claim it (nothing to do when another worker holds it or it is
    done), load its session, run `body` (not when the session is gone), then `finish` (by default:
    mark it done). Any error marks the job failed with its reason; a database error is first tried
    again with backoff, inside `body` as here.
    """
    job = with_db_retry(f"job {job_id}: claim", lambda: claim_job(job_id=job_id, worker=worker))
    if job is None:
        return
    try:
        session = _load_session(job)
        if session is not None:
            body(job, session)
        with_db_retry(f"job {job_id}: finish", lambda: (finish or _done)(job))
    except Exception as exc:
        log.exception("%s job %s failed", job.kind, job_id)
        _fail(job, exc)


def _done(job: Job) -> None:
    _finish(job, Job.DONE)


def _write_vectors(job: Job, session: Session, kind: str) -> None:
    """The job's last step: vectors for what it stored; without a model they wait for the sweep."""
    try:
        with_db_retry(f"job {job.id}: vectors", lambda: embed_items(session=session, kind=kind))
    except EmbeddingUnavailable as exc:
        log.warning("session %s: vectors not written: %s", session.sid, exc)


def run_compaction_job(*, job_id: str, worker: str) -> None:
    """Compact the job's session while Y is over budget, off the append path; then write vectors.

    Each round plans on a snapshot of Y outside any transaction (the summariser may be slow) and
    commits only that snapshot, so appends that arrive meanwhile are kept, in order. Safe to run
    twice: a second run finds nothing over budget and only marks the job done. `everything` (a
    manual compact handed to the worker) first moves X into Y and compacts even under budget.
    """

    def compact(job: Job, session: Session) -> None:
        everything = bool(job.params.get("everything"))
        rounds = 0

        def one_round() -> bool:
            # A fresh queue each try: a round that failed has rolled back, and plans again.
            queue = queue_for(session, "history")
            if everything and rounds == 0:
                with transaction.atomic():
                    queue.store.move_x_to_y("history")
            plan = queue.plan(force=everything and rounds == 0)
            if plan is None:
                return False
            with transaction.atomic():
                queue.commit(plan)
            return True

        while rounds < MAX_ROUNDS and with_db_retry(f"job {job.id}: round", one_round):
            rounds += 1
            with_db_retry(f"job {job.id}: progress", lambda n=rounds: _progress(job, n, n))
        _write_vectors(job, session, "history")

    _run_job(job_id, worker, compact)


def run_reembed_job(*, job_id: str, worker: str) -> None:
    """Re-embed the job's session with its model, reporting progress item by item."""

    def reembed(job: Job, session: Session) -> None:
        total = with_db_retry(f"job {job.id}: load", lambda: Item.objects.filter(session=session).count())
        with_db_retry(f"job {job.id}: progress", lambda: _progress(job, 0, total))
        # The whole pass again on an error: it restamps and deletes first, so a second try is whole.
        with_db_retry(
            f"job {job.id}: reembed",
            lambda: reembed_session(
                session=session, model=job.params.get("model"), progress=lambda n: _progress(job, n)
            ),
        )
        # The worker's embed_pending may have written some of the new vectors meanwhile (same
        # model, see embedding._still_stamped): progress counts what the session holds, not what
        # this pass wrote.
        held = with_db_retry(
            f"job {job.id}: load", lambda: ItemVector.objects.filter(session=session).count()
        )
        with_db_retry(f"job {job.id}: progress", lambda: _progress(job, held))

    _run_job(job_id, worker, reembed)


def requeue_unfinished_jobs() -> int:
    """Send every queued or running job again (a worker starting after a crash calls this).

    Duplicates are harmless: the claim lets exactly one run, and only once its holder is gone.
    """
    count = 0
    for job in Job.objects.unfinished():
        task = JOB_TASKS.get(job.kind)
        if task is not None:
            send_task(task, job_id=job.id)
            count += 1
    return count


# --- manual memory actions (docs/decisions.md) -------------------------------------------------------------


def memory_action(*, session: Session, action: str, mode: str | None = None) -> dict[str, Any]:
    """compact → {"removed"}, summary → {"count"}, reset (mode summary|all) → {"reset"}."""
    if action == "compact":
        if settings.OTTO_COMPACTION == "job" and _raw_tokens(session) > settings.OTTO_INLINE_COMPACT_TOKENS:
            # Its cost grows with X + Y (and a live summariser's wait with it): past the bound it is
            # the worker's, and the request only queues it.
            job = enqueue_compaction(session=session, everything=True)
            return {"removed": 0, "job_id": job.id}
        compacted = compact_session(session=session, force=True, include_x=True)
        if settings.OTTO_COMPACTION == "job":
            schedule_embedding(session, "history")  # the worker's, as after any append
        else:
            transaction.on_commit(lambda: embed_quietly(session, "history"))
        return {"removed": compacted.removed if compacted else 0}
    if action == "summary":
        return {"count": rebuild_summary(session=session)}
    if action == "reset":
        if mode not in ("summary", "all"):
            raise Invalid("reset needs mode 'summary' (keep the rolling summary) or 'all'", field="mode")
        reset_session(session=session, mode=mode)
        return {"reset": mode}
    raise Invalid("action must be compact, summary or reset", field="action")


def _raw_tokens(session: Session) -> int:
    """Tokens of the history turns in X and Y: what a manual compact would summarise."""
    totals = DjangoTierStore(session).totals("history")
    return totals.x + totals.y_raw


def rebuild_summary(*, session: Session) -> int:
    """Re-summarise the live bullets into a new generation; raw tiers untouched; no hash ref lost."""
    with transaction.atomic():
        queue = queue_for(session, "history")
        plan = queue.plan(force=True, raw=False)
        if plan is not None:
            queue.commit(plan)
        return Bullet.objects.of_kind(session, "history").live().count()


# --- export / import ------------------------------------------------------------------------------

EXPORT_FORMAT = "ottoweb.session"
# Version 2 added each turn's `name` and `occurred_at`; version 1 documents still import.
EXPORT_VERSION = 2


def export_session(session: Session) -> dict[str, Any]:
    """The session as one JSON document: live tiers verbatim, live bullets, the chunks they cite
    and the archived turns those chunks belong to (so recall's neighbours survive). No vectors:
    they belong to the model that made them."""
    bullets = list(
        Bullet.objects.filter(session=session, superseded=False).order_by("kind", "first_position", "id")
    )
    cited = {h for b in bullets for h in b.hash_refs}
    items = list(Item.objects.filter(session=session).select_related("chunk").order_by("kind", "position"))
    pending = [i for i in items if i.tier != "a"]
    # Archived context items have no bullet layer: they are exported as they are.
    archive = [i for i in items if i.tier == "a" and (i.kind == "context" or i.chunk.hash in cited)]
    chunks = {i.chunk.hash: i.chunk.text for i in archive}
    generations = dict(TierState.objects.filter(session=session).values_list("kind", "generation"))
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "session": {
            "id": session.sid,
            "title": session.title,
            "workspace": session.workspace,
            "x_budget": session.x_budget,
            "y_budget": session.y_budget,
            "turns": session.turns,
            "generation": generations.get("history", 0),
            "generations": {k: generations.get(k, 0) for k in KINDS},
            "embedding_model": session.embedding_model,
            "created_at": session.created_at.isoformat(),
            "updated_at": session.updated_at.isoformat(),
        },
        "pending": [
            {
                "kind": i.kind,
                "tier": i.tier,
                "position": i.position,
                "role": i.role,
                "hash": i.chunk.hash,
                "text": i.chunk.text,
                "protected": i.protected,
                "name": i.name,
                "occurred_at": i.when.isoformat(),
                "meta": i.meta,
            }
            for i in pending
        ],
        "bullets": [
            {
                "kind": b.kind,
                "text": b.text,
                "hash_refs": list(b.hash_refs),
                "generation": b.generation,
                "protected": b.protected,
                "role": b.role,
                "first_position": b.first_position,
            }
            for b in bullets
        ],
        "chunks": [{"hash": h, "text": t} for h, t in sorted(chunks.items())],
        "archive": [
            {
                "kind": i.kind,
                "position": i.position,
                "role": i.role,
                "hash": i.chunk.hash,
                "protected": i.protected,
                "name": i.name,
                "occurred_at": i.when.isoformat(),
                "meta": i.meta,
            }
            for i in archive
        ],
    }


def export_session_json(session: Session) -> bytes:
    """The export document as sent (compact JSON, UTF-8). TooLarge beyond OTTO_MAX_IMPORT_BYTES:
    export and import share that limit, so whatever is exported imports back."""
    data = json.dumps(export_session(session), ensure_ascii=False, separators=(",", ":")).encode()
    limit = settings.OTTO_MAX_IMPORT_BYTES
    if len(data) > limit:
        raise TooLarge(
            f"the session's document is {len(data):,} bytes, over the {limit:,} an import accepts "
            "(OTTO_MAX_IMPORT_BYTES, which export and import share); raise it to export this session"
        )
    return data


def import_session(*, user, document: Any, sid: str | None = None) -> Session:  # type: ignore[no-untyped-def]
    """Create a session from an export document, validated whole before anything is written.

    Raises Invalid naming the first bad path (e.g. `chunks[3].hash`), Conflict when the id is
    taken. Vectors are not in a document: a re-embedding job is queued on commit.
    """
    try:
        doc = importing.validate(document, max_item_chars=settings.OTTO_MAX_ITEM_CHARS)
    except importing.DocumentError as exc:
        raise Invalid(str(exc), field=exc.path) from None
    meta = doc["session"]
    target = sid or meta["id"]
    check_session_id(target)
    with transaction.atomic():
        session = create_session(
            user=user,
            sid=target,
            title=meta["title"],
            workspace=meta["workspace"],
            x_budget=meta["x_budget"],
            y_budget=meta["y_budget"],
        )
        texts = {c["hash"]: c["text"] for c in doc["chunks"]} | {p["hash"]: p["text"] for p in doc["pending"]}
        store = DjangoTierStore(session)
        chunk_of: dict[str, Any] = {}
        rows = [(p, p["tier"]) for p in doc["pending"]] + [(a, "a") for a in doc["archive"]]
        for entry, tier in sorted(rows, key=lambda r: (r[0]["kind"], r[0]["position"])):
            h = entry["hash"]
            if h not in chunk_of:
                chunk_of[h] = store.chunk_for(
                    Draft(role=entry["role"], text=texts[h], hash=h, tokens=tok.count_tokens(texts[h]))
                )
            # A version 1 document says nothing of when: its turns happened when they arrive.
            when = entry.get("occurred_at") or timezone.now()
            item = Item.objects.create(
                session=session,
                kind=entry["kind"],
                position=entry["position"],
                chunk=chunk_of[h],
                role=entry["role"],
                tier=tier,
                protected=entry["protected"],
                tokens=chunk_of[h].tokens,
                meta=entry["meta"],
                name=entry.get("name", ""),
                occurred_at=when,
                utc_offset=offset_minutes(when),
            )
            store.index_item(item, texts[h])
        Bullet.objects.bulk_create(
            [
                Bullet(
                    session=session,
                    kind=b["kind"],
                    generation=b["generation"],
                    text=b["text"],
                    hash_refs=b["hash_refs"],
                    tokens=tok.count_tokens(b["text"]),
                    first_position=b["first_position"],
                    protected=b["protected"],
                    role=b["role"],
                )
                for b in doc["bullets"]
            ]
        )
        for kind in KINDS:
            positions = [r[0]["position"] for r in rows if r[0]["kind"] == kind]
            TierState.objects.filter(session=session, kind=kind).update(
                generation=meta["generations"].get(kind, meta["generation"] if kind == "history" else 0),
                next_position=max(positions) + 1 if positions else 0,
            )
        Session.objects.filter(pk=session.pk).update(turns=meta["turns"])
        session.refresh_from_db()
        enqueue_reembed(session=session)
    return session


__all__ = [
    "AppendOutcome",
    "DB_RETRY_PAUSES",
    "EMBED_BATCH",
    "EMBED_DELAY",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "JOB_LEASE",
    "JOB_TASKS",
    "JobBusy",
    "MAX_ROUNDS",
    "NewItem",
    "RECALL_EMBED_LIMIT",
    "RECALL_EMBED_WINDOW",
    "UNADDRESSABLE_IDS",
    "append_items",
    "bounded_batches",
    "check_batch",
    "check_session_id",
    "claim_job",
    "compact_session",
    "create_session",
    "delete_session",
    "embed_items",
    "embed_missing",
    "embed_pending",
    "embed_stragglers",
    "enqueue_compaction",
    "enqueue_context_store",
    "enqueue_reembed",
    "export_session",
    "export_session_json",
    "import_session",
    "issue_token",
    "memory_action",
    "queue_for",
    "rebuild_summary",
    "reembed_session",
    "requeue_unfinished_jobs",
    "reset_session",
    "revoke_token",
    "run_compaction_job",
    "run_due_compactions",
    "run_reembed_job",
    "run_store_job",
    "session_embedder",
    "store_context_items",
    "summarizer_for",
    "with_db_retry",
    "worker_name",
]
