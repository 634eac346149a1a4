"""Background jobs: their rows, queueing them for the worker, and the claim that lets one run.

What the worker runs for each kind of job is in `worker`.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from ottoweb.errors import Invalid, TooManyJobs

from ..engine.embeddings import canonical
from ..models import Job, JobPayload, Session
from .dispatch import JOB_TASKS, send_on_commit, send_task

if TYPE_CHECKING:
    from .items import NewItem

# A running job whose worker has not shown a sign of life (progress) for this long may be taken over.
JOB_LEASE = timedelta(minutes=10)


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

    A running job answered here may already be past its last look at Y: as it is marked done it
    counts Y again and queues the next job when the turns appended meanwhile overflow it
    (`worker._finish_compaction`), so such a burst is compacted too.

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
    from ..engine.embeddings import build, fastembed_models

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
    fastembed_name = name[len("fastembed:") :]
    if name.startswith("fastembed:") and not folder and fastembed_name not in fastembed_models():
        # Without a folder fastembed fetches the model by name: one it does not list is refused here
        # rather than failed by the worker after the job was queued.
        raise Invalid(
            f"model {name!r}: fastembed knows no model {fastembed_name!r}; name one it lists, or give its "
            "folder (fastembed:<model>@<folder> inside OTTO_MODEL_DIRS)",
            field="model",
        )


def enqueue_reembed(*, session: Session, model: str | None = None) -> Job:
    """A re-embedding job for the session, sent on commit. Refuses a model that names nothing.

    At most one queued re-embedding per session: a second request answers the queued job (with
    the model it now asks for). Beyond OTTO_MAX_QUEUED_JOBS queued jobs of the user: TooManyJobs.
    """
    if model is not None:
        # An empty name is a mistake, not a request for the default: the default is asked for by
        # leaving the model out.
        if not model.strip():
            raise Invalid(
                "model must not be empty: leave it out to re-embed with the server's model "
                "(OTTO_EMBEDDING_MODEL)",
                field="model",
            )
        _check_model_spec(model)
    params = {"model": model} if model is not None else {}
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
