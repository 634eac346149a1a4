"""What the worker runs: the frame every job runs in (claim it, load its session, run its body,
mark it done or failed), and the body of each kind of job."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from ..engine.embeddings import EmbeddingUnavailable
from ..models import TIER_Y, Item, ItemVector, Job, JobPayload, Session, TierState
from .compaction import queue_for
from .embedding import embed_items, reembed_session
from .items import NewItem, bounded_batches, store_context_items
from .jobs import JobBusy, claim_job, enqueue_compaction
from .retry import with_db_retry

log = logging.getLogger(__name__)

# A compaction job keeps compacting while Y is still over budget, but not forever: past this many
# rounds it hands the session to a job queued behind the others (`_finish_compaction`).
MAX_ROUNDS = 8


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
    session_pk = job.session_id
    if session_pk is None:
        return None
    return with_db_retry(f"job {job.id}: load", lambda: Session.objects.filter(pk=session_pk).first())


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
    A job that ends with turns it never planned on taking Y over budget (a burst after its last
    round's look, or MAX_ROUNDS run out) queues the next one as it is marked done.
    """

    # The session's next position when the last round looked at Y: every turn from there on was
    # appended after that look, and no round of this job planned on it.
    looked: dict[str, int] = {}

    def compact(job: Job, session: Session) -> None:
        everything = bool(job.params.get("everything"))
        rounds = 0

        def one_round() -> bool:
            # A fresh queue each try: a round that failed has rolled back, and plans again.
            queue = queue_for(session, "history")
            # Read before the snapshot: a turn appended after this read is at this position or
            # beyond, whether the snapshot caught it or not.
            looked["next"] = _next_position(session)
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
            with_db_retry(f"job {job.id}: progress", partial(_progress, job, rounds, rounds))
        _write_vectors(job, session, "history")

    def finish(job: Job) -> None:
        _finish_compaction(job, unseen_from=looked.get("next", 0))

    _run_job(job_id, worker, compact, finish)


def _next_position(session: Session) -> int:
    state = TierState.objects.filter(session=session, kind="history").values_list("next_position", flat=True)
    return state.first() or 0


def _finish_compaction(job: Job, *, unseen_from: int) -> None:
    """Mark a compaction job done and, when turns from position `unseen_from` on (appended after
    its last round looked at Y) have taken Y over budget, queue the next compaction in the same
    transaction.

    Until it is marked done the job is the session's unfinished compaction, and every overflow
    answers its id (`enqueue_compaction`): a burst that reaches Y after the job's last look (while
    it writes vectors, or during its last round when that is round MAX_ROUNDS) would otherwise sit
    there, held back from `GET /context`, until some later append overflowed X.
    """
    with transaction.atomic():
        # Every append holds this row lock (its session's history tier row) from its first turn to
        # its commit, and reads the unfinished job under it. Taken first, it makes an append that
        # was answered this job's id commit before Y is read below; one that comes after finds the
        # job done and queues its own (or takes the one queued here). An append thus waits at most
        # for this short transaction, never for a summariser. (Locking the job row in
        # `enqueue_compaction` instead would order an append's locks tier row → job row → session
        # row, against `claim_job`'s session row → job row: a deadlock on PostgreSQL.)
        if job.session_id is not None:
            list(
                TierState.objects.select_for_update()
                .filter(session_id=job.session_id, kind="history")
                .values_list("pk", flat=True)
            )
        _finish(job, Job.DONE)
        session = Session.objects.filter(pk=job.session_id).first() if job.session_id is not None else None
        if session is None:
            return
        # Only turns this job never planned on call for another: Y over budget with nothing new (a
        # person's verbatim turns alone, when `needs_compaction` is false; bullets and kept raw
        # turns the rounds could not shrink) would meet the same rounds again, job after job.
        # Each job queued here thus has appended turns to take, and the chain ends with the burst.
        unseen = Item.objects.of_kind(session, "history").in_tier(TIER_Y).filter(position__gte=unseen_from)
        if unseen.exists() and queue_for(session, "history").needs_compaction():
            follower = enqueue_compaction(session=session)
            log.info(
                "session %s: Y over budget with turns job %s never saw; job %s follows",
                session.sid,
                job.id,
                follower.id,
            )


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
            with_db_retry(f"job {job.id}: store", partial(store_context_items, session=session, items=batch))
            with_db_retry(f"job {job.id}: progress", partial(_progress, job, done))
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
