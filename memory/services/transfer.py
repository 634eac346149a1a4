"""Export and import: a session as one JSON document, and a session made from one.

A document is validated whole before anything is written (services.documents); errors name the
path of the first problem, e.g. `pending[2].hash: does not match the sha256 of text`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from ottoweb.errors import Invalid, TooLarge

from ..engine import tokens as tok
from ..engine.types import KINDS, Draft, format_moment
from ..engine.types import Bullet as EngineBullet
from ..models import Bullet, Item, Session, TierState, offset_minutes
from ..storage import DjangoTierStore, bullet_row
from .documents import DocumentError, validate
from .jobs import enqueue_reembed
from .sessions import check_session_id, create_session

if TYPE_CHECKING:
    from django.contrib.auth.models import User

EXPORT_FORMAT = "ottoweb.session"
# Version 2 added each turn's `name` and `occurred_at`; version 1 documents still import. Pins
# (`pinned` on turns and bullets) and a bullet's `name` and `occurred_at` were added to version 2
# as optional fields: a document without them imports with no pins, names or times.
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
            # The session's own share of Y for the person's words (null: the server's default).
            "protected_share": session.protected_share,
            "created_at": format_moment(session.created_at),
            "updated_at": format_moment(session.updated_at),
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
                "pinned": i.pinned,
                "name": i.name,
                "occurred_at": format_moment(i.when),
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
                "pinned": b.pinned,
                "role": b.role,
                "name": b.name,
                "occurred_at": format_moment(b.when) if b.when is not None else None,
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
                "pinned": i.pinned,
                "name": i.name,
                "occurred_at": format_moment(i.when),
                "meta": i.meta,
            }
            for i in archive
        ],
    }


def export_session_json(session: Session) -> bytes:
    """The export document as sent (compact JSON, UTF-8). TooLarge beyond OTTO_MAX_IMPORT_BYTES:
    export and import share that limit, so whatever is exported imports back."""
    # allow_nan=False: nothing stored holds NaN or Infinity (engine.types.number_problem), and an
    # export must be JSON any reader takes.
    data = json.dumps(
        export_session(session), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode()
    limit = settings.OTTO_MAX_IMPORT_BYTES
    if len(data) > limit:
        raise TooLarge(
            f"the session's document is {len(data):,} bytes, over the {limit:,} an import accepts "
            "(OTTO_MAX_IMPORT_BYTES, which export and import share); raise it to export this session"
        )
    return data


def import_session(*, user: User, document: Any, sid: str | None = None) -> Session:
    """Create a session from an export document, validated whole before anything is written.

    Raises Invalid naming the first bad path (e.g. `chunks[3].hash`), Conflict when the id is
    taken. Vectors are not in a document: a re-embedding job is queued on commit.
    """
    try:
        doc = validate(document, max_item_chars=settings.OTTO_MAX_ITEM_CHARS)
    except DocumentError as exc:
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
            protected_share=meta["protected_share"],
        )
        texts = {c["hash"]: c["text"] for c in doc["chunks"]} | {p["hash"]: p["text"] for p in doc["pending"]}
        tokens_of: dict[str, int] = {}
        placed = []
        rows = [(p, p["tier"]) for p in doc["pending"]] + [(a, "a") for a in doc["archive"]]
        for entry, tier in sorted(rows, key=lambda r: (r[0]["kind"], r[0]["position"])):
            h = entry["hash"]
            if h not in tokens_of:
                tokens_of[h] = tok.count_tokens(texts[h])
            # A version 1 document says nothing of when: its turns happened when they arrive.
            when = entry.get("occurred_at") or timezone.now()
            row = Item(
                session=session,
                kind=entry["kind"],
                position=entry["position"],
                role=entry["role"],
                tier=tier,
                protected=entry["protected"],
                tokens=tokens_of[h],
                meta=entry["meta"],
                pinned=entry["pinned"],
                name=entry.get("name", ""),
                occurred_at=when,
                utc_offset=offset_minutes(when),
            )
            placed.append((row, Draft(role=entry["role"], text=texts[h], hash=h, tokens=tokens_of[h])))
        DjangoTierStore(session).write_items(placed)
        Bullet.objects.bulk_create(
            [
                bullet_row(
                    session,
                    b["kind"],
                    EngineBullet(
                        text=b["text"],
                        hash_refs=tuple(b["hash_refs"]),
                        generation=b["generation"],
                        tokens=tok.count_tokens(b["text"]),
                        first_position=b["first_position"],
                        protected=b["protected"],
                        role=b["role"] or None,
                        pinned=b["pinned"],
                        name=b["name"],
                        occurred_at=b.get("occurred_at"),
                    ),
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
