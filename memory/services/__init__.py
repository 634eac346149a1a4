"""Every write to memory, one function each, each in a transaction.

The API, the dashboard, Celery tasks and management commands all call these; nothing else writes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ottoweb.errors import Invalid, TooLarge

from .. import importing
from ..engine import tokens as tok
from ..engine.types import KINDS, Draft
from ..models import Bullet, Item, Session, TierState, offset_minutes
from ..store import DjangoTierStore
from .actions import memory_action, rebuild_summary
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
    embed_stragglers,
    reembed_session,
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
from .worker import MAX_ROUNDS, run_compaction_job, run_due_compactions, run_reembed_job, run_store_job

log = logging.getLogger(__name__)


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
