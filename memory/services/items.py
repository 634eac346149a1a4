"""Appending items to a session (each checked, batches bounded, all or nothing), and taking the
newest back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from ottoweb.errors import Conflict, Invalid, NotFound, TooLarge

from ..engine.hashing import content_hash
from ..engine.types import KINDS, ROLES, is_blank, meta_problem, name_problem, path_suffix
from ..models import TIER_ARCHIVED, Chunk, Item, Session, TierState
from ..storage import DjangoTierStore, fts_delete, lookups, vec_delete
from .compaction import compact_overflow, queue_for
from .embedding import embed_appended, schedule_embedding
from .pins import check_pins


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
    # Kept verbatim in the prompt view until unpinned (services.pins); history items only.
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    hash: str
    kind: str
    position: int
    compaction: dict[str, Any] | None


def _check_item(item: NewItem, where: str) -> None:
    if item.role not in ROLES:
        raise Invalid(f"{where}role must be one of {', '.join(ROLES)}", field=f"{where}role")
    if item.kind not in KINDS:
        raise Invalid(f"{where}kind must be one of {', '.join(KINDS)}", field=f"{where}kind")
    if is_blank(item.text):
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
    found = meta_problem(item.meta)
    if found:
        # Named down to the value at fault: items[2].meta.a.b
        field = f"{where}meta{path_suffix(found[0])}"
        raise Invalid(f"{field} {found[1]}", field=field)
    if item.pinned and item.kind != "history":
        raise Invalid(
            f"{where}pinned must be false: a context item cannot be pinned (it never enters the prompt view)",
            field=f"{where}pinned",
        )


def _text_bytes(item: NewItem) -> int:
    return len(item.text.encode("utf-8", "surrogatepass"))


def check_batch(items: Sequence[NewItem], *, field: str = "items") -> None:
    """TooLarge when a batch is beyond OTTO_MAX_BATCH_ITEMS items or OTTO_MAX_BATCH_BYTES of text,
    naming the list as the caller spells it (`field`: the REST body's `items`, an MCP tool's `turns`).

    A batch is one transaction, and on SQLite every other writer waits for it: these keep it short.
    """
    count, limit = len(items), settings.OTTO_MAX_BATCH_ITEMS
    if count > limit:
        raise TooLarge(
            f"the batch has {count:,} {field}; the limit is {limit:,} (OTTO_MAX_BATCH_ITEMS): send it in parts",
            field=field,
        )
    size, limit = sum(_text_bytes(i) for i in items), settings.OTTO_MAX_BATCH_BYTES
    if size > limit:
        raise TooLarge(
            f"the batch's texts are {size:,} bytes; the limit is {limit:,} (OTTO_MAX_BATCH_BYTES): "
            "send it in parts",
            field=field,
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


def _prefix(items: Sequence[NewItem], index: int, field: str | None) -> str:
    """Where a refusal of `items[index]` names it: `items[2].` in a batch, nothing for a lone item,
    or `<field>[2].` whatever the count when the caller names the list (an MCP tool's `turns`)."""
    if field is None:
        return f"items[{index}]." if len(items) > 1 else ""
    return f"{field}[{index}]."


def append_items(
    *, session: Session, items: Sequence[NewItem], field: str | None = None
) -> list[AppendOutcome]:
    """Append items in order, all or nothing; compact Y when an append overflows it.

    Every item is validated before anything is written, and pinned items against the session's
    cap (`pins.check_pins`: TooManyPins); a refusal names the item as `_prefix` does. Each item is
    mirrored in the database in the transaction that acknowledges it, so an acknowledged item
    survives any crash.
    """
    for index, item in enumerate(items):
        _check_item(item, _prefix(items, index, field))
    outcomes: list[AppendOutcome] = []
    queues = {kind: queue_for(session, kind) for kind in dict.fromkeys(i.kind for i in items)}
    # Counted and hashed before the transaction: none of it needs the write lock.
    drafts = [
        queues[i.kind].draft(
            i.role,
            i.text,
            protected=i.protected,
            meta=i.meta,
            name=i.name,
            occurred_at=i.occurred_at,
            pinned=i.pinned,
        )
        for i in items
    ]
    pins = [
        (draft.tokens, f"{_prefix(items, index, field)}pinned")
        for index, draft in enumerate(drafts)
        if draft.pinned
    ]
    with _while_the_session_exists(session), transaction.atomic(), ExitStack() as batches:
        if pins:
            # Under the tiers' lock, which the appends below take anyway: no other pin takes the room.
            lookups.tier_state(session.pk, "history", lock=True)
            check_pins(session, pins)
        for queue in queues.values():
            # The rows are written together when the loop ends (or before a compaction reads them).
            batches.enter_context(cast(DjangoTierStore, queue.store).batched())
        history_turns = 0
        for item, draft in zip(items, drafts, strict=True):
            queue = queues[item.kind]
            appended = queue.append_draft(draft)
            compaction = None
            if appended.needs_compaction:
                compaction = compact_overflow(session, queue)
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
    embed_appended(session, queues, len(items))
    return outcomes


@contextmanager
def _while_the_session_exists(session: Session) -> Iterator[None]:
    """A write that loses a race with the session's delete (its rows' foreign key fails) is the
    client's 404, not a fault of the database: the transaction inside has rolled back whole."""
    try:
        yield
    except IntegrityError:
        if Session.objects.filter(pk=session.pk).exists():
            raise
        raise NotFound(
            f"session {session.sid!r} was deleted while the turns were appended; nothing was written"
        ) from None


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


def pop_last_item(*, session: Session) -> Item | None:
    """Remove the session's newest history turn and return its row (its chunk loaded), as if it had
    never been appended: its position is the next one again, so the session's export lists
    positions without a gap and imports back. None when the session holds no turn.

    A raw turn can go, in X or in Y (X moves to Y whole when it overflows, so the newest turn is
    often in Y): a compaction planned on it meanwhile finds it gone when it commits, writes nothing
    and plans again (storage/tiers.py). One compacted into the summary stays: its bullet cites it
    (Conflict, nothing written). Its chunk goes too unless another turn of the same text still
    holds it (the summary cites archived turns only, never a raw one).
    """
    with transaction.atomic():
        # The tiers' lock, as every write to them takes first: no append or compaction in between.
        state = lookups.tier_state(session.pk, "history", lock=True)
        if state is None:
            return None
        item = Item.objects.of_kind(session, "history").select_related("chunk").order_by("-position").first()
        if item is None:
            return None
        if item.tier == TIER_ARCHIVED:
            raise Conflict(
                f"the newest turn (position {item.position}) has been compacted into the summary, "
                "which cites it; only a raw turn can be popped"
            )
        fts_delete([item.pk])
        vec_delete([item.pk])
        Item.objects.filter(pk=item.pk).delete()
        Chunk.objects.filter(pk=item.chunk_id, items__isnull=True).delete()
        TierState.objects.filter(pk=state.pk).update(next_position=item.position)
        Session.objects.filter(pk=session.pk).update(turns=F("turns") - 1, updated_at=timezone.now())
    return item
