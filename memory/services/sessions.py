"""Sessions: their ids, finding a user's, creating and deleting them, and clearing their conversation."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from ottoweb.errors import Conflict, Invalid, NotFound

from ..engine.types import KINDS, SESSION_ID, is_blank, label_problem
from ..models import Item, Session, SessionQuerySet, TierState
from ..storage import fts_delete, lookups, vec_delete
from . import embedding

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# A session's title and workspace: each shown on one line of the sessions list and the session's page.
MAX_LABEL_CHARS = 200


def session_label_problem(value: str) -> str | None:
    """Why `value` cannot be a session's title or workspace, or None: too long, or holding what a
    speaker's name may not (a line break, a control character, a direction override), which would
    break the line it is shown on or make it read as something else."""
    if len(value) > MAX_LABEL_CHARS:
        return f"is {len(value):,} characters; the limit is {MAX_LABEL_CHARS}"
    return label_problem(value)


# Ids a URL cannot address: "." and ".." are dot segments every client and proxy normalises away,
# and /sessions/import is the import route.
UNADDRESSABLE_IDS = frozenset({".", "..", "import"})


def check_session_id(sid: str, *, field: str = "id") -> None:
    """Invalid, naming `field` (how the caller spells the id), unless `sid` is a session id a URL
    can address."""
    if not SESSION_ID.match(sid):
        raise Invalid(
            "session id must be 1-128 characters of letters, digits, '.', '_', ':' or '-'", field=field
        )
    if sid in UNADDRESSABLE_IDS:
        raise Invalid(f"session id {sid!r} cannot be addressed in a URL; choose another", field=field)


def get_user_session(user: User, sid: str, *, totals: bool = False) -> Session:
    """`user`'s session `sid`, or NotFound: another user's session is indistinguishable from none.

    Every interface finds a session here (the REST API, the MCP tools, the dashboard, the commands).
    `totals` annotates what `reads.session_summary` reads (three aggregate subqueries): an append or
    a recall does without them.
    """
    if not SESSION_ID.match(sid):
        # No session has such an id; a NUL or a 10,000-character id never reaches the database.
        raise NotFound("no session with that id")
    if totals:
        session = Session.objects.for_user(user).with_totals().filter(sid=sid).first()
    else:
        session = lookups.user_session(user.pk, sid)
    if session is None:
        raise NotFound(f"no session {sid!r}")
    return session


# As a lessons list's blank q (docs/api.md, "Blank"); an empty or absent q lists every session.
BLANK_Q = "q must not be empty: leave it out to list every session, newest first"


def matching_sessions(user: User, q: str) -> SessionQuerySet:
    """`user`'s sessions whose id, title or workspace holds `q`; every one when `q` is empty.

    Invalid at `q` when it holds only blank characters (a zero-width space, a no-break space): it
    would search for text no one can see or type. The REST list and MCP's list_sessions read here.
    """
    if q and is_blank(q):
        raise Invalid(BLANK_Q, field="q")
    return Session.objects.for_user(user).matching(q)


def create_session(
    *,
    user: User,
    sid: str | None = None,
    title: str = "",
    workspace: str = "",
    x_budget: int | None = None,
    y_budget: int | None = None,
    protected_share: float | None = None,
) -> Session:
    """Create a session for `user`; its id is generated when absent. Conflict when the id is taken."""
    if sid is None:
        sid = "s-" + secrets.token_hex(8)
    check_session_id(sid)
    for field, value in (("title", title), ("workspace", workspace)):
        problem = session_label_problem(value)
        if problem:
            raise Invalid(f"{field} {problem}", field=field)
    if protected_share is not None and not 0.05 <= protected_share <= 1.0:
        raise Invalid("protected_share must be between 0.05 and 1", field="protected_share")
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
                protected_share=protected_share,
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


def reset_session(*, session: Session, mode: str) -> None:
    """Clear the conversation: items, chunks, vectors and index rows of both kinds.

    mode "summary" keeps the rolling summary: the live bullets, and behind them the archived turns
    they cite (chunk, item, vector, index row), so every hash a kept bullet cites still resolves,
    the dashboard can open it, recall finds it and the session's export is accepted by its own
    import. Everything else goes: X, Y raw, uncited archived turns, the context tier, and the
    superseded generations (they cite turns that are gone). "all" deletes every bullet generation
    too and starts the generation count again.
    """
    with transaction.atomic():
        kept: set[int] = set()
        if mode == "summary":
            cited = {
                h
                for refs in session.bullets.filter(superseded=False).values_list("hash_refs", flat=True)
                for h in refs
            }
            kept = set(
                session.items.filter(tier="a", kind="history", chunk__hash__in=cited).values_list(
                    "pk", flat=True
                )
            )
        item_ids = [pk for pk in session.items.values_list("pk", flat=True) if pk not in kept]
        fts_delete(item_ids)
        vec_delete(item_ids)
        for start in range(0, len(item_ids), 500):
            Item.objects.filter(pk__in=item_ids[start : start + 500]).delete()
        session.chunks.exclude(items__isnull=False).delete()
        if mode == "all":
            session.bullets.all().delete()
            TierState.objects.filter(session=session).update(generation=0)
        else:
            session.bullets.filter(superseded=True).delete()
        Session.objects.filter(pk=session.pk).update(turns=0, updated_at=timezone.now())
