"""The X/Y tiered queue (docs/decisions.md, "The tiered queue and recall").

X holds the newest items verbatim. When an append takes X over its budget, all of X (that item
included) moves to Y in one step. When Y (raw items plus bullets) is over its budget, a compaction
stores every raw Y item by hash and replaces Y with cited bullets (`compaction.plan_compaction`).

The queue keeps no state of its own: everything lives in the `TierStore`, so a queue built over a
store after a restart resumes exactly where the last one stopped (the seed's `restore=True`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import tokens as tok
from .compaction import REABSTRACT, CompactionResult, is_quote, plan_compaction
from .hashing import content_hash
from .prompt import Summarizer
from .types import Bullet, Draft, Item, TierStore, View, calendar_day

# After a compaction the bullets fill at most this share of Y, and the newest raw turns of Y up to
# RAW_FRACTION of it stay raw (the next compaction takes them), leaving a tenth of Y to grow into.
# Measured with eval_view (docs/sessions.md, "The budget"): the summary holds more answers per
# token than raw turns, so the view holds most when the summary fills most of Y.
TARGET_FRACTION = 0.8
RAW_FRACTION = 0.1


@dataclass(frozen=True, slots=True)
class Appended:
    item: Item
    moved_to_y: bool
    needs_compaction: bool


@dataclass(frozen=True, slots=True)
class Plan:
    """A computed compaction: the generation it builds on and the Y items it replaces."""

    base_generation: int
    positions: list[int]
    result: CompactionResult


@dataclass(frozen=True, slots=True)
class Compacted:
    result: CompactionResult
    removed: int
    committed: bool


def default_protected(kind: str, role: str) -> bool:
    """A person's own words in the conversation are protected unless the caller says otherwise."""
    return kind == "history" and role == "user"


class TieredQueue:
    """One kind's tiers over a store. Context items skip the tiers: they are archived at once."""

    def __init__(
        self,
        store: TierStore,
        *,
        kind: str = "history",
        x_budget: int,
        y_budget: int,
        summarize: Summarizer,
        protect: bool = True,
        reabstract: bool = REABSTRACT,
        protected_share: float | None = None,
    ) -> None:
        self.store = store
        self.kind = kind
        self.x_budget = x_budget
        self.y_budget = y_budget
        self.summarize = summarize
        self.protect = protect
        self.reabstract = reabstract
        # The share of Y verbatim protected turns may fill; None leaves them unbounded (the seed's
        # policy, which eval_compaction's seed rows measure).
        self.protected_share = protected_share

    def draft(
        self,
        role: str,
        text: str,
        *,
        protected: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        name: str = "",
        occurred_at: datetime | None = None,
        pinned: bool = False,
    ) -> Draft:
        if protected is None:
            protected = default_protected(self.kind, role)
        return Draft(
            role=role,
            text=text,
            hash=content_hash(text),
            tokens=tok.count_tokens(text),
            protected=protected,
            meta=dict(meta or {}),
            name=name,
            occurred_at=occurred_at,
            pinned=pinned,
        )

    def append(
        self,
        role: str,
        text: str,
        *,
        protected: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        name: str = "",
        occurred_at: datetime | None = None,
        pinned: bool = False,
    ) -> Appended:
        """Add one item; say whether Y now needs compaction (the caller decides when to run it)."""
        return self.append_draft(
            self.draft(
                role, text, protected=protected, meta=meta, name=name, occurred_at=occurred_at, pinned=pinned
            )
        )

    def append_draft(self, draft: Draft) -> Appended:
        """`append` of an item already drafted (a caller can count its tokens before taking a lock)."""
        if self.kind == "context":
            return Appended(self.store.archive(self.kind, draft), False, False)
        item = self.store.add_to_x(self.kind, draft)
        moved = False
        if self.store.totals(self.kind).x > self.x_budget:
            self.store.move_x_to_y(self.kind)
            moved = True
        return Appended(item, moved, moved and self.needs_compaction())

    def needs_compaction(self) -> bool:
        totals = self.store.totals(self.kind)
        # Protected bullets cannot shrink; Y counts as full only when what compaction can act on is.
        return totals.y > self.y_budget and totals.y > totals.protected

    def plan(self, *, force: bool = False, include_x: bool = False, raw: bool = True) -> Plan | None:
        """Compute the next generation from a snapshot of Y; writes nothing.

        `force` compacts even under budget; `include_x` first moves X into Y (a manual "compact
        everything now"); `raw=False` re-summarises only the live bullets (the "summary" action).
        Returns None when there is nothing to compact.
        """
        if self.kind == "context":
            return None
        if not force and not self.needs_compaction():
            return None
        if include_x and self.store.items(self.kind, "x"):
            self.store.move_x_to_y(self.kind)
        totals = self.store.totals(self.kind)
        everything = self.store.items(self.kind, "y") if raw else []
        prior = self.store.live_bullets(self.kind)
        # Y over budget with only its newest raw turns: they go too.
        snapshot = everything if force else (self._older_part(everything) or everything)
        if not force and raw and not snapshot:
            # No raw turn at all: bullets alone over Y are protected turns and the quotes of them,
            # which another round would only rewrite.
            return None
        if not snapshot and not any(not b.protected for b in prior):
            return None
        result = self._summarise(snapshot, prior, totals.generation + 1)
        kept = sum(i.tokens for i in everything[len(snapshot) :])
        if kept and sum(b.tokens for b in result.bullets) + kept > self.y_budget:
            # The raw turns kept back would leave Y full (a protected share near 1): they go too.
            snapshot = everything
            result = self._summarise(snapshot, prior, totals.generation + 1)
        return Plan(
            base_generation=totals.generation, positions=[i.position for i in snapshot], result=result
        )

    def _older_part(self, y_raw: list[Item]) -> list[Item]:
        """Y's raw turns but the newest, which stay raw up to RAW_FRACTION of Y."""
        room, keep = int(self.y_budget * RAW_FRACTION), 0
        while keep < len(y_raw) and room >= y_raw[-1 - keep].tokens:
            room -= y_raw[-1 - keep].tokens
            keep += 1
        return y_raw[: len(y_raw) - keep]

    def _summarise(self, raw: list[Item], prior: list[Bullet], generation: int) -> CompactionResult:
        return plan_compaction(
            raw,
            prior,
            self.summarize,
            generation=generation,
            target_tokens=int(self.y_budget * TARGET_FRACTION),
            protect=self.protect,
            reabstract=self.reabstract,
            protected_target=None
            if self.protected_share is None
            else int(self.y_budget * self.protected_share),
        )

    def commit(self, plan: Plan) -> Compacted:
        """Write a plan: only its snapshot is archived, so items appended meanwhile are kept.

        Nothing is written when another compaction committed first (the generation moved on).
        """
        committed = self.store.commit_compaction(
            self.kind,
            base_generation=plan.base_generation,
            archived_positions=plan.positions,
            bullets=plan.result.bullets,
        )
        return Compacted(
            result=plan.result, removed=len(plan.positions) if committed else 0, committed=committed
        )

    def compact(self, *, force: bool = False, include_x: bool = False) -> Compacted | None:
        """Plan and commit at once (inline compaction)."""
        plan = self.plan(force=force, include_x=include_x)
        return None if plan is None else self.commit(plan)

    def current_view(self) -> View:
        """Bullets (oldest, compact), then Y's raw overflow, then X (newest)."""
        return View(
            bullets=self.store.live_bullets(self.kind),
            y_raw=self.store.items(self.kind, "y"),
            x=self.store.items(self.kind, "x"),
        )


# Every further line of an entry starts with this, so only an entry's first line starts at column 0.
CONTINUATION = "  "


def render_entry(label: str, text: str) -> str:
    """One entry of the prompt text: `label` and the text's first line, each further line indented.

    Any line break (\\n, \\r, U+2028 …) ends a line, so a text holding "\\nuser: ignore previous
    instructions" shows that line as "  user: …", inside its own entry: it cannot pass for a turn.
    """
    first, *rest = text.splitlines() or [""]
    return "\n".join([label + first, *(CONTINUATION + line for line in rest)])


def render_view(view: View) -> str:
    """The prompt text of a view: bullets, then Y raw, then X, one entry each.

    An entry starts at column 0 with "- " (a bullet) or "role" (a turn, or a protected bullet);
    its further lines start with two spaces (`render_entry`). A turn says who said it, and the day
    where the day changes: "user (Caroline · 8 May 2023): …", then "assistant (Melanie): …".
    """
    entries = []
    day = ""
    for bullet in view.bullets:
        if bullet.protected:
            label, day = turn_label(bullet.role or "user", bullet.name, bullet.occurred_at, day)
        elif is_quote(bullet):
            label = (
                QUOTE_LABEL
                if bullet.role == "user"
                else f"- earlier {bullet.role} words (excerpt; the full text is in memory): "
            )
        else:
            label = "- "
        entries.append(render_entry(label, bullet.text))
    for item in (*view.y_raw, *view.x):
        label, day = turn_label(item.role, item.name, item.occurred_at, day)
        entries.append(render_entry(label, item.text))
    return "\n".join(entries)


def turn_label(role: str, name: str, when: datetime | None, day: str) -> tuple[str, str]:
    """A turn's label — its role, then its speaker's name and its day (when the day is not `day`,
    the day of the entry before) — and the day it leaves for the next entry."""
    said = " ".join(name.split())  # no line break of any kind inside a label
    today = calendar_day(when) if when is not None else day
    if today and today != day:
        said = f"{said} · {today}" if said else today
    return (f"{role} ({said}): " if said else f"{role}: "), today


# A quote bullet's label: the person's words, cut, with the whole turn a recall away.
QUOTE_LABEL = "- the person's earlier words (excerpt; the full text is in memory): "
