"""Read-side queries: what the API, the MCP tools and the dashboard show. Nothing here writes.

- a session's summary and its live context: the documents the REST API and the MCP tools return;
- what only the dashboard shows: tier fills, the generation timeline, the turns a bullet cites
  and who said them when, the pinned turns.

Every write goes through `memory/services/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Count, Min, Q, Sum
from django.db.models.functions import Coalesce

from .engine.queue import render_view
from .engine.types import View
from .models import TIER_ARCHIVED, TIER_X, TIER_Y, Bullet, Item, Session, local_time
from .storage import bullet_from_row, item_from_row

# --- a session's summary and live context (REST API, MCP) ---------------------------------------


def turn_dict(row: Item) -> dict[str, Any]:
    return {
        "hash": row.chunk.hash,
        "role": row.role,
        "name": row.name,
        "occurred_at": row.when,
        "meta": row.meta,
        "text": row.chunk.text,
        "position": row.position,
        "pinned": row.pinned,
    }


def bullet_dict(row: Bullet) -> dict[str, Any]:
    return {
        "id": row.pk,
        "text": row.text,
        "hash_refs": list(row.hash_refs),
        "generation": row.generation,
        "protected": row.protected,
        "pinned": row.pinned,
        # A quote of protected turns that left the view: the person's ("user"), or another role's.
        "quote": not row.protected and bool(row.role),
    }


def session_context(session: Session, kind: str = "history") -> dict[str, Any]:
    """The live tiers of one kind as the API's context document: bullets, Y raw, X, tokens, text."""
    bullets = list(Bullet.objects.of_kind(session, kind).live().order_by("first_position", "id"))
    pending = list(Item.objects.of_kind(session, kind).pending().select_related("chunk").order_by("position"))
    y_raw = [row for row in pending if row.tier == TIER_Y]
    x = [row for row in pending if row.tier == TIER_X]
    y_raw, held = _within_y(y_raw, room=session.y_budget - sum(b.tokens for b in bullets))
    tokens = {
        "bullets": sum(b.tokens for b in bullets),
        "y_raw": sum(r.tokens for r in y_raw),
        "x": sum(r.tokens for r in x),
        "protected": sum(b.tokens for b in bullets if b.protected),
        "held_back": sum(r.tokens for r in held),
    }
    tokens["total"] = tokens["bullets"] + tokens["y_raw"] + tokens["x"]
    view = View(
        bullets=[bullet_from_row(b) for b in bullets],
        y_raw=[item_from_row(r) for r in y_raw],
        x=[item_from_row(r) for r in x],
    )
    return {
        "kind": kind,
        "bullets": [bullet_dict(b) for b in bullets],
        "y_raw": [turn_dict(r) for r in y_raw],
        "x": [turn_dict(r) for r in x],
        "tokens": tokens,
        "held_back": len(held),
        "budgets": {"x": session.x_budget, "y": session.y_budget},
        # Y over budget between an append and its compaction (a job not run yet, or a protected share
        # of 1 with one huge turn); the context says so.
        "over_budget": tokens["bullets"] + tokens["y_raw"] > session.y_budget,
        "text": render_view(view),
    }


def _within_y(y_raw: list[Item], *, room: int) -> tuple[list[Item], list[Item]]:
    """Y's raw turns that fit in `room`, and the others held back.

    Between the append that overflows Y and the compaction that shrinks it (a job the worker has
    not run yet, or a worker that is down), Y's raw turns would make the prompt view outgrow its
    budget. Some are held back instead: nothing is lost — they are stored, recall finds them, and
    the compaction turns them into bullets — and the view stays within X + Y. The pinned turns are
    shown whatever the room (when they alone do not fit beside the bullets, the view is over budget,
    and the context says so, until the compaction carries them); then the person's turns, then the
    others, each newest first. A turn too large for what is left is held back and the older ones
    are still tried: one huge tool output must not take the person's instruction out with it.
    """
    shown: set[int] = {row.position for row in y_raw if row.pinned}
    spent = sum(row.tokens for row in y_raw if row.pinned)
    for persons in (True, False):
        for row in reversed(y_raw):
            if row.pinned or row.protected != persons or spent + row.tokens > room:
                continue
            shown.add(row.position)
            spent += row.tokens
    return [r for r in y_raw if r.position in shown], [r for r in y_raw if r.position not in shown]


def session_summary(session: Session) -> dict[str, Any]:
    """The API's session document; `session` comes from `Session.objects.with_totals()`."""
    return {
        "id": session.sid,
        "title": session.title,
        "workspace": session.workspace,
        "created_at": session.created_at,
        "updated_at": session.updated_at,
        "turns": session.turns,
        "x_budget": session.x_budget,
        "y_budget": session.y_budget,
        "generation": session.generation,
        "tokens": {"x": session.x_tokens, "y_raw": session.y_raw_tokens, "bullets": session.bullet_tokens},
        "embedding_model": session.embedding_model,
        "protected_share": protected_share_of(session),
    }


def protected_share_of(session: Session) -> float:
    """The share of Y the session's verbatim protected turns may fill."""
    return session.protected_share if session.protected_share is not None else settings.OTTO_PROTECTED_SHARE


# --- the dashboard's session page: tiers, timeline, cited turns ----------------------------------


def fill(tokens: int, budget: int) -> int:
    """Percent of `budget` used, 0-100 (a tier over budget shows full; the numbers say by how much)."""
    if budget <= 0:
        return 0
    return max(0, min(100, round(100 * tokens / budget)))


@dataclass(frozen=True, slots=True)
class Tiers:
    """The history tiers of a session against their budgets, for the tiers picture."""

    x_tokens: int
    x_budget: int
    y_raw_tokens: int
    bullet_tokens: int
    y_budget: int
    generation: int
    x_turns: int
    y_turns: int
    archived_turns: int
    bullets: int
    context_items: int

    @property
    def x_pct(self) -> int:
        return fill(self.x_tokens, self.x_budget)

    @property
    def bullets_pct(self) -> int:
        return fill(self.bullet_tokens, self.y_budget)

    @property
    def y_raw_pct(self) -> int:
        # Stacked after the bullets: the two together never draw wider than the track.
        return min(100 - self.bullets_pct, fill(self.y_raw_tokens, self.y_budget))

    @property
    def y_tokens(self) -> int:
        return self.bullet_tokens + self.y_raw_tokens

    @property
    def y_pct(self) -> int:
        return fill(self.y_tokens, self.y_budget)

    @property
    def x_over(self) -> bool:
        return self.x_tokens > self.x_budget

    @property
    def y_over(self) -> bool:
        return self.y_tokens > self.y_budget


def tiers(session: Session) -> Tiers:
    """Counts and token totals of every tier; `session` comes from `with_totals()`."""
    items = Item.objects.filter(session=session).aggregate(
        x=Count("pk", filter=Q(kind="history", tier=TIER_X)),
        y=Count("pk", filter=Q(kind="history", tier=TIER_Y)),
        archived=Count("pk", filter=Q(kind="history", tier=TIER_ARCHIVED)),
        context=Count("pk", filter=Q(kind="context")),
    )
    bullets = Bullet.objects.of_kind(session, "history").live().count()
    return Tiers(
        x_tokens=session.x_tokens,
        x_budget=session.x_budget,
        y_raw_tokens=session.y_raw_tokens,
        bullet_tokens=session.bullet_tokens,
        y_budget=session.y_budget,
        generation=session.generation,
        x_turns=items["x"],
        y_turns=items["y"],
        archived_turns=items["archived"],
        bullets=bullets,
        context_items=items["context"],
    )


def cited_archived_turns(session: Session) -> int:
    """How many archived turns the live summary cites: what a reset that keeps the summary keeps."""
    cited = {
        h
        for refs in Bullet.objects.of_kind(session, "history").live().values_list("hash_refs", flat=True)
        for h in refs
    }
    return Item.objects.filter(
        session=session, kind="history", tier=TIER_ARCHIVED, chunk__hash__in=cited
    ).count()


@dataclass(frozen=True, slots=True)
class GenerationPoint:
    generation: int
    at: datetime
    bullets: int


@dataclass(frozen=True, slots=True)
class Timeline:
    """When each compaction generation of a session's history was written, as an SVG step line."""

    points: list[GenerationPoint]
    path: str
    dots: list[tuple[float, float, GenerationPoint]]
    width: int = 320
    height: int = 64

    @property
    def first_at(self) -> datetime | None:
        return self.points[0].at if self.points else None

    @property
    def last_at(self) -> datetime | None:
        return self.points[-1].at if self.points else None


def generation_timeline(session: Session) -> Timeline:
    """Every generation (superseded ones are kept) with the time its first bullet was written."""
    rows = (
        Bullet.objects.of_kind(session, "history")
        .values("generation")
        .annotate(at=Min("created_at"), n=Count("pk"))
        .order_by("generation")
    )
    points = [GenerationPoint(r["generation"], r["at"], r["n"]) for r in rows]
    width, height, pad, tail = 320, 64, 6, 36
    if not points:
        return Timeline(points, "", [], width, height)
    start, end = points[0].at.timestamp(), points[-1].at.timestamp()
    # Generations written within a minute (an import, a burst of appends) are spaced evenly instead.
    by_time = end - start >= 60
    top = max(p.generation for p in points)
    last = max(len(points) - 1, 1)

    def xy(n: int, p: GenerationPoint) -> tuple[float, float]:
        share = (p.at.timestamp() - start) / (end - start) if by_time else n / last
        # The last level runs on to the right edge (it is the current one), so leave room for it.
        x = pad + (width - 2 * pad - tail) * (share if len(points) > 1 else 0.5)
        y = height - pad - (height - 2 * pad) * (p.generation / top if top else 0)
        return round(x, 1), round(y, 1)

    coords = [xy(n, p) for n, p in enumerate(points)]
    # A step line: the generation holds until the next compaction raises it.
    path = f"M{pad},{height - pad} H{coords[0][0]} V{coords[0][1]}"
    for x, y in coords[1:]:
        path += f" H{x} V{y}"
    path += f" H{width - pad}"
    return Timeline(
        points, path, [(x, y, p) for (x, y), p in zip(coords, points, strict=True)], width, height
    )


@dataclass(frozen=True, slots=True)
class Cited:
    """A hash a bullet cites and the turns stored under it (none when the text is gone)."""

    hash: str
    turns: list[Item]


def cited_turns(session: Session, bullet: Bullet) -> list[Cited]:
    """The raw turns behind a bullet's hash refs, in the order the bullet cites them."""
    refs = list(dict.fromkeys(bullet.hash_refs))
    rows = (
        Item.objects.filter(session=session, kind=bullet.kind, chunk__hash__in=refs)
        .select_related("chunk")
        .order_by("position")
    )
    by_hash: dict[str, list[Item]] = {}
    for row in rows:
        by_hash.setdefault(row.chunk.hash, []).append(row)
    return [Cited(h, by_hash.get(h, [])) for h in refs]


@dataclass(frozen=True, slots=True)
class Sources:
    """Who said the turns a bullet cites, and when: the speakers' names in the order they first
    speak, and the earliest and latest turn's time, each in the offset it was sent with (None when
    none of the cited turns is stored any more)."""

    names: tuple[str, ...] = ()
    first: datetime | None = None
    last: datetime | None = None

    @property
    def spans_days(self) -> bool:
        return self.first is not None and self.last is not None and self.first.date() != self.last.date()


CITED_BATCH = 10_000


def summary_bullets(session: Session, kind: str = "history") -> list[tuple[Bullet, Sources]]:
    """The live bullets in summary order, each with the speakers and times of the turns it cites.

    Two queries whatever the number of bullets (one more per CITED_BATCH cited turns): the
    bullets, then the name and time of every turn any of them cites. A text said twice is one
    chunk: its archived turns are the ones cited, so a later turn still live that repeats it (a
    "Thanks!") is not taken for a source.
    """
    bullets = list(Bullet.objects.of_kind(session, kind).live().order_by("first_position", "id"))
    refs = list({h for b in bullets for h in b.hash_refs})
    found: dict[str, list[tuple[bool, int, str, datetime]]] = {}
    turns = Item.objects.of_kind(session, kind)
    # In batches: one IN list of every hash would pass SQLite's limit on a query's parameters.
    for start in range(0, len(refs), CITED_BATCH):
        rows = turns.filter(chunk__hash__in=refs[start : start + CITED_BATCH]).values_list(
            "chunk__hash", "tier", "position", "name", "occurred_at", "utc_offset"
        )
        for h, tier, position, name, occurred_at, offset in rows:
            found.setdefault(h, []).append(
                (tier == TIER_ARCHIVED, position, name, local_time(occurred_at, offset))
            )
    said = {
        h: [turn[1:] for turn in rows if turn[0]] or [turn[1:] for turn in rows] for h, rows in found.items()
    }
    return [
        (b, _sources([turn for h in dict.fromkeys(b.hash_refs) for turn in said.get(h, ())])) for b in bullets
    ]


def _sources(turns: list[tuple[int, str, datetime]]) -> Sources:
    if not turns:
        return Sources()
    turns.sort(key=lambda t: t[0])
    names = tuple(dict.fromkeys(name for _, name, _ in turns if name))
    times = [when for _, _, when in turns]
    # Compared as instants (offsets may differ), shown each in its own offset.
    return Sources(names, min(times), max(times))


def pinned_turns(session: Session, kind: str = "history") -> list[Item]:
    """The session's pinned turns in order, whatever their tier: in X, raw in Y, or archived (a
    pinned bullet carries it). One query however many are pinned."""
    return list(
        Item.objects.of_kind(session, kind).filter(pinned=True).select_related("chunk").order_by("position")
    )


def live_turns(session: Session, tier: str, kind: str = "history") -> list[Item]:
    return list(
        Item.objects.of_kind(session, kind).in_tier(tier).select_related("chunk").order_by("position")
    )


def pending_tokens(session: Session) -> dict[str, int]:
    """Tokens and turns still raw in Y (what a compaction would archive) and how many are protected."""
    return (
        Item.objects.of_kind(session, "history")
        .in_tier(TIER_Y)
        .aggregate(
            turns=Count("pk"),
            tokens=Coalesce(Sum("tokens"), 0),
            protected=Count("pk", filter=Q(protected=True)),
        )
    )
