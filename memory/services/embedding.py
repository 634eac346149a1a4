"""Embedding: which model this database uses, and the vectors of every session's items.

The model is chosen once, recorded, never switched silently: the first use records
OTTO_EMBEDDING_MODEL (default `minilm`). If the setting later names another model, the recorded one
stays in force and a system check says how to switch (re-embed).

Vectors are written off the append path: the worker writes them for new turns
(`schedule_embedding`, `embed_pending`, the periodic `embed_missing`), or in inline mode the
append itself after its transaction (`embed_appended`); a recall only computes, for itself, the
vectors of a few stragglers (`straggler_vectors`); `reembed_session` replaces a session's vectors
with another model's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np
from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction

from ..engine.embeddings import (
    Embedder,
    EmbeddingUnavailable,
    canonical,
    get_embedder,
    loaded_embedder,
    recent_documents,
    to_blob,
)
from ..engine.retrieval import dense_text
from ..engine.types import KINDS
from ..models import Item, ItemVector, Session, Setting
from ..storage import (
    UnstoredVectors,
    said_of,
    sessions_missing_vectors,
    unembedded_items,
    vec_delete,
    vec_write,
)
from .dispatch import send_task
from .retry import with_db_retry

log = logging.getLogger(__name__)

SETTING_KEY = "embedding_model"


def database_model() -> str:
    """The recorded embedding spec of this database, recording the configured one on first use."""
    row = Setting.objects.filter(key=SETTING_KEY).first()
    if row is not None:
        return row.value
    try:
        with transaction.atomic():
            Setting.objects.create(key=SETTING_KEY, value=settings.OTTO_EMBEDDING_MODEL)
    except IntegrityError:
        pass
    return Setting.objects.get(key=SETTING_KEY).value


def database_stamp() -> str:
    return canonical(database_model())


def embedder(spec: str | None = None) -> Embedder:
    """The loaded backend for `spec` or the database's model. Raises EmbeddingUnavailable."""
    return get_embedder(spec or database_model())


def configured_differs() -> str | None:
    """A sentence when OTTO_EMBEDDING_MODEL names another model than the recorded one."""
    row = Setting.objects.filter(key=SETTING_KEY).first()
    if row is None or canonical(row.value) == canonical(settings.OTTO_EMBEDDING_MODEL):
        return None
    return (
        f"OTTO_EMBEDDING_MODEL is {settings.OTTO_EMBEDDING_MODEL!r} but this database records "
        f"{row.value!r}; the recorded model stays in force until sessions are re-embedded "
        f"(manage.py reembed --all --model {settings.OTTO_EMBEDDING_MODEL})"
    )


def session_embedder(session: Session) -> Embedder:
    """The backend whose vectors this session's recall ranks by. Raises EmbeddingUnavailable."""
    if session.embedding_model:
        # The usual case in a web process, which loaded the model with its first recall: the
        # database's spec (a lookup, ≈ 0.4 ms) only says how to load it.
        ready = loaded_embedder(session.embedding_model)
        if ready is not None:
            return ready
    stamp = session.embedding_model or database_stamp()
    spec = database_model()
    return get_embedder(spec if canonical(spec) == stamp else stamp)


EMBED_BATCH = 128


def embed_items(
    *,
    session: Session,
    kind: str,
    limit: int | None = None,
    newest: int | None = None,
    progress: Any = None,
) -> int:
    """Write vectors for the session's items of `kind` that have none, in batches; return how many.

    Each item is embedded with the turn before it (same thread) as context, stamped with the
    session's model. Idempotent: items that already have a vector are skipped. `newest` looks only
    at the newest that many items (a recall's cheap check; the worker looks at all). Raises
    EmbeddingUnavailable when there is something to embed and the model cannot be loaded
    (nothing is written then).
    """
    return _embed(session, kind, unembedded_items(session.pk, kind, newest=newest, limit=limit), progress)


def _embed(session: Session, kind: str, ids: list[int], progress: Any = None, *, recent: bool = False) -> int:
    """`recent`: take what a recall in this process embedded for itself (inline mode's appends)."""
    if not ids:
        return 0  # nothing to embed: no model to load
    embedder = session_embedder(session)
    done = 0
    for start in range(0, len(ids), EMBED_BATCH):
        rows, texts = _dense_texts(session, kind, ids[start : start + EMBED_BATCH])
        if recent:
            vectors = recent_documents.embed_documents(embedder, texts, keep=False)
        else:
            vectors = embedder.embed_documents(texts)
        with transaction.atomic():
            if not _still_stamped(session, embedder.name):
                break  # a reembed switched the model meanwhile: its own pass writes the new vectors
            # A concurrent embedder may have got there first; the unique item key keeps one vector.
            taken = set(ItemVector.objects.filter(item__in=rows).values_list("item_id", flat=True))
            fresh = [(r, v) for r, v in zip(rows, vectors, strict=True) if r.pk not in taken]
            ItemVector.objects.bulk_create(
                ignore_conflicts=True,  # a worker and a recall may embed the same straggler
                objs=[
                    ItemVector(
                        item=r,
                        session=session,
                        kind=kind,
                        model=embedder.name,
                        dim=embedder.dim,
                        vector=to_blob(v),
                    )
                    for r, v in fresh
                ],
            )
            vec_write([(r.pk, session.pk, kind, embedder.name, to_blob(v)) for r, v in fresh], embedder.dim)
        done += len(fresh)
        if progress is not None:
            progress(done)
    return done


def _dense_texts(session: Session, kind: str, ids: list[int]) -> tuple[list[Item], list[str]]:
    """The items `ids` (in position order) and what their vectors embed: each with the turn before
    it in the same thread as context."""
    rows = list(Item.objects.filter(pk__in=ids).select_related("chunk").order_by("position"))
    before = {
        r.position: r
        for r in Item.objects.of_kind(session, kind)
        .filter(position__in=[r.position - 1 for r in rows])
        .select_related("chunk")
    }
    texts = []
    for r in rows:
        prev = before.get(r.position - 1)
        texts.append(dense_text(said_of(r, r.chunk.text), said_of(prev, prev.chunk.text) if prev else None))
    return rows, texts


def _still_stamped(session: Session, model: str) -> bool:
    """Whether the session still ranks by `model`, holding its row until the transaction ends.

    The lock orders a vector write against a reembed (which restamps the row first): without it a
    worker that loaded the old model could write old vectors after the reembed deleted them, and
    the session would hold a mixture the reembed was meant to end."""
    stamp = (
        Session.objects.select_for_update()
        .filter(pk=session.pk)
        .values_list("embedding_model", flat=True)
        .first()
    )
    return stamp is not None and (stamp or database_stamp()) == model


def reembed_session(*, session: Session, model: str | None = None, progress: Any = None) -> int:
    """Replace every vector of the session with one from `model` (default: the database's model).

    The session's stamp changes first, so recall never ranks a mixture. Returns vectors written.
    """
    spec = model or database_model()
    get_embedder(spec)  # fail before deleting anything if the model cannot be had
    with transaction.atomic():
        # Restamp first: the row lock makes a concurrent vector write (see _still_stamped) either
        # finish before the delete below, or see the new stamp and write nothing.
        Session.objects.filter(pk=session.pk).update(embedding_model=canonical(spec))
        session.embedding_model = canonical(spec)
        item_ids = list(session.items.values_list("pk", flat=True))
        vec_delete(item_ids)
        ItemVector.objects.filter(session=session).delete()
    written = 0
    for kind in KINDS:
        before = written  # progress counts across kinds, not from zero for each
        on_batch = None if progress is None else (lambda n, b=before: progress(b + n))
        written += embed_items(session=session, kind=kind, progress=on_batch)
    return written


# New turns get their vectors from the worker shortly after they are acknowledged, never on the
# append path nor inside a recall (which computes, unstored, at most RECALL_EMBED_LIMIT stragglers'
# own). One task, sent EMBED_DELAY seconds ahead, serves a whole burst.
EMBED_DELAY = 1.0
RECALL_EMBED_LIMIT = 16
_embedding_sent: dict[tuple[int, str], float] = {}


def schedule_embedding(session: Session, kind: str) -> None:
    if settings.OTTO_COMPACTION != "job":
        return  # inline mode has no worker: the append embeds after its transaction (embed_appended)
    now = time.monotonic()
    key = (session.pk, kind)
    if now - _embedding_sent.get(key, -EMBED_DELAY) < EMBED_DELAY:
        return  # a task already on its way will find this turn too: it runs after the delay
    if len(_embedding_sent) > 10_000:
        for stale in [k for k, sent in _embedding_sent.items() if now - sent >= EMBED_DELAY]:
            del _embedding_sent[stale]
    _embedding_sent[key] = now

    def send() -> None:
        # Twice the window: an append skipped inside the window has its own commit's worth of
        # time to land before the task looks.
        send_task("memory.embed_session", countdown=2 * EMBED_DELAY, session_pk=session.pk, kind=kind)

    transaction.on_commit(send, robust=True)


def embed_pending(*, session_pk: int, kind: str) -> int:
    """The worker's half of `schedule_embedding`: vectors for the session's items that lack one.

    A database error is tried again with backoff, then raised (the task sends itself again, and
    `embed_missing` sweeps up whatever is left); a model that cannot be loaded is logged: recall
    says it is degraded.
    """
    session = with_db_retry("embed: load", lambda: Session.objects.filter(pk=session_pk).first())
    if session is None:
        return 0  # deleted meanwhile
    try:
        return with_db_retry(
            f"session {session.sid}: vectors", lambda: embed_items(session=session, kind=kind)
        )
    except EmbeddingUnavailable as exc:
        log.warning("session %s: vectors not written: %s", session.sid, exc)
        return 0


def embed_missing() -> int:
    """The periodic sweep: vectors for every item of every session that still has none.

    Catches what a worker restart, a lost task or a database error that outlasted every retry
    left behind; idempotent, and cheap when nothing is missing (one anti-join).
    """
    done = 0
    for session_pk, kind in with_db_retry("sweep", sessions_missing_vectors):
        try:
            done += embed_pending(session_pk=session_pk, kind=kind)
        except DatabaseError as exc:
            log.warning("sweep: session %s %s: vectors not written: %s", session_pk, kind, exc)
    return done


# A recall looks for stragglers among this many newest items: an anti-join over a 50,000-item
# session costs more than the rest of the recall.
RECALL_EMBED_WINDOW = 256


def straggler_vectors(*, session: Session, kind: str) -> UnstoredVectors | None:
    """Vectors, for this recall only, of at most RECALL_EMBED_LIMIT of the newest vector-less items
    among the newest RECALL_EMBED_WINDOW, in position order; None when there are none.

    A read writes nothing: storing vectors is the worker's (or, in inline mode, the append's), so
    a recall neither takes the write lock nor races a reembed; what it computed is kept in this
    process's memory for the recalls after it. A straggler past the limit is still found by its
    words. Raises EmbeddingUnavailable when there are stragglers and no model.
    """
    ids = unembedded_items(session.pk, kind, newest=RECALL_EMBED_WINDOW, limit=None)[-RECALL_EMBED_LIMIT:]
    if not ids:
        return None  # the usual case: no model to load
    rows, texts = _dense_texts(session, kind, ids)
    vectors = recent_documents.embed_documents(session_embedder(session), texts)
    return UnstoredVectors(np.fromiter((r.pk for r in rows), dtype=np.int64, count=len(rows)), vectors)


def embed_appended(session: Session, kinds: Iterable[str], count: int) -> None:
    """Inline mode's vectors for an append of `count` items (there is no worker to send them to;
    in job mode they are the worker's, `schedule_embedding`), written after its transaction.

    They are written RECALL_EMBED_LIMIT at a time (one model call each, not one a turn): fewer wait
    at any moment than a recall embeds for itself, so every turn is ranked by meaning. It looks at
    the newest `count` + RECALL_EMBED_WINDOW items, so the next append makes up for one whose
    vectors failed (no model, a full disk); an error is logged, never raised (the append is
    acknowledged already). Turns a recall has embedded for itself meanwhile are not embedded again."""
    if settings.OTTO_COMPACTION == "job":
        return
    for kind in kinds:
        waiting = unembedded_items(session.pk, kind, newest=count + RECALL_EMBED_WINDOW, limit=None)
        if len(waiting) >= RECALL_EMBED_LIMIT:
            _quietly(session, partial(_embed, session, kind, waiting, recent=True))


def embed_quietly(session: Session, kind: str) -> None:
    """`embed_items` after a commit, in inline mode: an error is logged, never raised."""
    _quietly(session, lambda: embed_items(session=session, kind=kind))


def _quietly(session: Session, embed: Callable[[], int]) -> None:
    try:
        embed()
    except (EmbeddingUnavailable, DatabaseError) as exc:
        # A later append or compaction embeds what still lacks a vector; an append must never fail
        # because a model is missing, nor answer an error for turns it has already committed
        # because their vectors could not be written (a full disk): the client would send them twice.
        log.warning("session %s: vectors not written: %s", session.sid, exc)
