"""Every write to memory, one function each, each in a transaction.

The API, the dashboard, Celery tasks and management commands all call these; nothing else writes.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from . import embedding
from .engine import summarizers
from .engine.compaction import Summarizer
from .engine.embeddings import Embedder, EmbeddingUnavailable, canonical, get_embedder, to_blob
from .engine.queue import Compacted, TieredQueue
from .engine.retrieval import dense_text
from .engine.types import KINDS, ROLES
from .models import ApiToken, Item, ItemVector, Session, TierState
from .store import DjangoTierStore, fts_delete, vec_delete, vec_write

log = logging.getLogger(__name__)

SESSION_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class ServiceError(Exception):
    """A refused request: `status` and `code` go to the client with the message."""

    status = 400
    code = "bad_request"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class Invalid(ServiceError):
    status = 422
    code = "invalid"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


@dataclass(frozen=True, slots=True)
class NewItem:
    role: str
    text: str
    kind: str = "history"
    protected: bool | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    hash: str
    kind: str
    position: int
    compaction: dict[str, Any] | None


@lru_cache(maxsize=4)
def summarizer_for(spec: str) -> Summarizer:
    """The summariser named by OTTO_SUMMARIZER (DESIGN decision 4)."""
    if spec == "offline":
        return summarizers.offline()
    raise ValueError(f"unknown summariser {spec!r}")


def queue_for(session: Session, kind: str = "history", *, summarize: Summarizer | None = None) -> TieredQueue:
    return TieredQueue(
        DjangoTierStore(session),
        kind=kind,
        x_budget=session.x_budget,
        y_budget=session.y_budget,
        summarize=summarize or summarizer_for(settings.OTTO_SUMMARIZER),
    )


def issue_token(*, user, name: str) -> tuple[ApiToken, str]:  # type: ignore[no-untyped-def]
    """Issue an API token for `user`; the plain token is returned once and never stored."""
    return ApiToken.issue(user, name)


def revoke_token(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def check_session_id(sid: str) -> None:
    if not SESSION_ID.match(sid):
        raise Invalid(
            "session id must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", field="id"
        )


def create_session(
    *,
    user,  # type: ignore[no-untyped-def]
    sid: str | None = None,
    title: str = "",
    workspace: str = "",
    x_budget: int | None = None,
    y_budget: int | None = None,
) -> Session:
    """Create a session for `user`; its id is generated when absent. Conflict when the id is taken."""
    if sid is None:
        sid = "s-" + secrets.token_hex(8)
    check_session_id(sid)
    try:
        with transaction.atomic():
            session = Session.objects.create(
                user=user,
                sid=sid,
                title=title,
                workspace=workspace,
                x_budget=x_budget or settings.OTTO_X_BUDGET,
                y_budget=y_budget or settings.OTTO_Y_BUDGET,
                embedding_model=embedding.database_stamp(),
            )
            TierState.objects.bulk_create([TierState(session=session, kind=k) for k in KINDS])
    except IntegrityError:
        raise Conflict(f"session id {sid!r} is taken", field="id") from None
    return session


def delete_session(*, session: Session) -> None:
    """Remove the session and everything of it (items, chunks, bullets, vectors, index rows)."""
    with transaction.atomic():
        item_ids = list(session.items.values_list("pk", flat=True))
        fts_delete(item_ids)
        vec_delete(item_ids)
        session.items.all().delete()
        session.delete()


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
            appended = queue.append(item.role, item.text, protected=item.protected, meta=item.meta)
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
    return outcomes


def _compact_now(session: Session, queue: TieredQueue) -> dict[str, Any] | None:
    """Run the compaction an append triggered. Inline for now; the job path replaces this body."""
    compact_session(session=session, kind=queue.kind, queue=queue)
    transaction.on_commit(lambda: _embed_quietly(session, queue.kind))
    return None


def _embed_quietly(session: Session, kind: str) -> None:
    try:
        embed_items(session=session, kind=kind)
    except EmbeddingUnavailable as exc:
        # Recall says it is degraded; an append must never fail because a model is missing.
        log.warning("session %s: vectors not written: %s", session.sid, exc)


def compact_session(
    *, session: Session, kind: str = "history", force: bool = False, queue: TieredQueue | None = None
) -> Compacted | None:
    """Compact one kind of the session: raw Y items to chunks, Y replaced by cited bullets."""
    with transaction.atomic():
        queue = queue or queue_for(session, kind)
        compacted = queue.compact(force=force)
        if compacted is not None and compacted.result.summarizer_error:
            log.warning("session %s: %s", session.sid, compacted.result.summarizer_error)
        return compacted


def session_embedder(session: Session) -> Embedder:
    """The backend whose vectors this session's recall ranks by. Raises EmbeddingUnavailable."""
    stamp = session.embedding_model or embedding.database_stamp()
    spec = embedding.database_model()
    return get_embedder(spec if canonical(spec) == stamp else stamp)


EMBED_BATCH = 128


def embed_items(*, session: Session, kind: str, limit: int | None = None, progress: Any = None) -> int:
    """Write vectors for the session's items of `kind` that have none, in batches; return how many.

    Each item is embedded with the turn before it (same thread) as context, stamped with the
    session's model. Idempotent: items that already have a vector are skipped. Raises
    EmbeddingUnavailable when the model cannot be loaded (nothing is written then).
    """
    embedder = session_embedder(session)
    pending = Item.objects.of_kind(session, kind).filter(vector__isnull=True).order_by("position")
    if limit is not None:
        pending = pending[:limit]
    ids = list(pending.values_list("pk", flat=True))
    done = 0
    for start in range(0, len(ids), EMBED_BATCH):
        rows = list(Item.objects.filter(pk__in=ids[start : start + EMBED_BATCH]).select_related("chunk"))
        before = {
            r.position: r
            for r in Item.objects.of_kind(session, kind)
            .filter(position__in=[r.position - 1 for r in rows])
            .select_related("chunk")
        }
        texts = []
        for r in rows:
            prev = before.get(r.position - 1)
            texts.append(
                dense_text(
                    r.chunk.text,
                    r.role,
                    r.meta,
                    prev.chunk.text if prev else None,
                    prev.meta if prev else None,
                )
            )
        vectors = embedder.embed_documents(texts)
        with transaction.atomic():
            # A concurrent embedder may have got there first; the unique item key keeps one vector.
            taken = set(ItemVector.objects.filter(item__in=rows).values_list("item_id", flat=True))
            fresh = [(r, v) for r, v in zip(rows, vectors, strict=True) if r.pk not in taken]
            ItemVector.objects.bulk_create(
                [
                    ItemVector(
                        item=r,
                        session=session,
                        kind=kind,
                        model=embedder.name,
                        dim=embedder.dim,
                        vector=to_blob(v),
                    )
                    for r, v in fresh
                ]
            )
            vec_write([(r.pk, session.pk, kind, embedder.name, to_blob(v)) for r, v in fresh], embedder.dim)
        done += len(fresh)
        if progress is not None:
            progress(done)
    return done


def reembed_session(*, session: Session, model: str | None = None, progress: Any = None) -> int:
    """Replace every vector of the session with one from `model` (default: the database's model).

    The session's stamp changes first, so recall never ranks a mixture. Returns vectors written.
    """
    spec = model or embedding.database_model()
    get_embedder(spec)  # fail before deleting anything if the model cannot be had
    with transaction.atomic():
        item_ids = list(session.items.values_list("pk", flat=True))
        vec_delete(item_ids)
        ItemVector.objects.filter(session=session).delete()
        Session.objects.filter(pk=session.pk).update(embedding_model=canonical(spec))
        session.embedding_model = canonical(spec)
    return sum(embed_items(session=session, kind=kind, progress=progress) for kind in KINDS)
