"""Pins: a history turn kept verbatim in the prompt view, whatever its age, until it is unpinned.

A pinned turn in X or Y is already verbatim in the view; compaction carries it as a protected bullet
the protected share never moves out (engine/compaction.py). Pinning a turn already archived adds that
bullet to the live generation itself, and a compaction's commit keeps the pins as they are then
(compaction.PinKeepingStore). Pins count against the protected share, so a session's pins are
capped: OTTO_MAX_PINS turns, and at most the protected share of Y in tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Sum

from ottoweb.errors import NotFound, TooManyPins

from ..models import Item, Session
from ..storage import lookups
from .compaction import compact_overflow, keep_pins_in_view, queue_for

# Positions are stored as 64-bit integers; a larger number names no turn (and never reaches SQL).
MAX_POSITION = 2**63 - 1


def _protected_tokens(session: Session) -> int:
    """The session's protected share of Y, in tokens, as compaction computes it."""
    queue = queue_for(session)
    return int(queue.y_budget * (queue.protected_share or 0.0))


def check_pins(session: Session, pins: Sequence[tuple[int, str]]) -> None:
    """TooManyPins unless turns of these (tokens, field) may be pinned besides the session's pins:
    at most OTTO_MAX_PINS turns, holding at most the session's protected share of Y.

    The caller holds the transaction and has locked the session's history tiers, so two requests
    cannot both take the last room. The refusal names the field of the first turn past the cap.
    """
    held = Item.objects.filter(session=session, kind="history", pinned=True).aggregate(
        count=Count("pk"), tokens=Sum("tokens")
    )
    count, tokens = held["count"], held["tokens"] or 0
    cap, share = settings.OTTO_MAX_PINS, _protected_tokens(session)
    for size, field in pins:
        if count + 1 > cap:
            raise TooManyPins(
                f"the session has {count} pinned turns, the most a session may pin "
                f"(OTTO_MAX_PINS = {cap}): unpin one first",
                field=field,
            )
        if tokens + size > share:
            raise TooManyPins(
                f"pinned turns may hold at most {share:,} tokens, the session's protected share of Y "
                f"(protected_share × y_budget; OTTO_PROTECTED_SHARE by default); the session's pins hold "
                f"{tokens:,} and this turn {size:,}: unpin one first",
                field=field,
            )
        count, tokens = count + 1, tokens + size


def set_pinned(*, session: Session, position: int, pinned: bool = True) -> Item:
    """Pin or unpin the history turn at `position`; returns its row (its chunk loaded). Idempotent.

    Pinning a turn of X or Y sets its flag (compaction carries it). Pinning an archived turn also
    puts it back in the view (`compaction.keep_pins_in_view`): a live bullet holding its text
    verbatim, protected and pinned (a live protected bullet of the turn is flagged instead); when
    that takes Y over budget, a compaction follows as after an append, and the protected share moves
    unpinned turns out. Unpinning clears the flag of the turn and of its pinned bullet, which stays
    in the view as a protected bullet until a compaction's protected share moves it out (unless
    another turn of the same text is still pinned).

    NotFound for a position with no history turn; TooManyPins past the session's cap (nothing is
    written either way).
    """
    if not 0 <= position <= MAX_POSITION:
        raise NotFound(f"no history turn at position {position}")
    with transaction.atomic():
        # Every write to the history tiers takes this lock first (storage/tiers.py): the turn cannot
        # be compacted away, nor another pin take the room, while this one is decided.
        lookups.tier_state(session.pk, "history", lock=True)
        item = (
            Item.objects.of_kind(session, "history").filter(position=position).select_related("chunk").first()
        )
        if item is None:
            raise NotFound(f"no history turn at position {position}")
        if pinned and not item.pinned:
            check_pins(session, [(item.tokens, "pinned")])
        if item.pinned != pinned:
            Item.objects.filter(pk=item.pk).update(pinned=pinned)
            item.pinned = pinned
        if keep_pins_in_view(session, [item.chunk.hash]):
            queue = queue_for(session)
            if queue.needs_compaction():
                compact_overflow(session, queue)
    return item
