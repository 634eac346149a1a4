"""Every write to memory, one function each, each in a transaction.

The API, the dashboard, Celery tasks and management commands all call these; nothing else writes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from ottoweb.errors import Invalid, TooLarge

from .. import importing
from ..engine import tokens as tok
from ..engine.embeddings import EmbeddingUnavailable
from ..engine.types import KINDS, Draft
from ..models import Bullet, Item, ItemVector, Job, JobPayload, Session, TierState, offset_minutes
from ..store import DjangoTierStore
from .compaction import compact_session, queue_for, summarizer_for
from .dispatch import JOB_TASKS
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
from .items import AppendOutcome, NewItem, append_items, bounded_batches, check_batch, store_context_items
from .jobs import (
    JOB_LEASE,
    JobBusy,
    claim_job,
    enqueue_compaction,
    enqueue_context_store,
    enqueue_reembed,
    requeue_unfinished_jobs,
    worker_name,
)
from .retry import DB_RETRY_PAUSES, with_db_retry
from .sessions import UNADDRESSABLE_IDS, check_session_id, create_session, delete_session, reset_session
from .tokens import issue_token, revoke_token

log = logging.getLogger(__name__)


# --- background jobs ----------------------------------------------------------------------------

# A compaction job keeps compacting while Y is still over budget, but not forever.
MAX_ROUNDS = 8


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
