"""Plain data shapes the engine works on, and the storage protocol it needs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool", "system"]
Kind = Literal["history", "context"]
Tier = Literal["x", "y"]

ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")
KINDS: tuple[str, ...] = ("history", "context")


@dataclass(frozen=True, slots=True)
class Draft:
    """An item about to be appended: the store gives it a position."""

    role: str
    text: str
    hash: str
    tokens: int
    protected: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Item:
    """One appended turn, raw and verbatim. `position` orders a kind's items within a session."""

    position: int
    role: str
    text: str
    hash: str
    tokens: int
    protected: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Bullet:
    """A line of the rolling summary and the chunk hashes it stands for.

    A protected bullet is a person's turn carried verbatim (`hash_refs` is its own hash).
    `first_position` is the earliest source item's position, which keeps bullets in time order.
    """

    text: str
    hash_refs: tuple[str, ...]
    generation: int
    tokens: int
    first_position: int
    protected: bool = False
    role: str | None = None


@dataclass(frozen=True, slots=True)
class TierTotals:
    """Token totals of one kind's live tiers, and its compaction generation."""

    x: int
    y_raw: int
    bullets: int
    protected: int
    generation: int

    @property
    def y(self) -> int:
        return self.y_raw + self.bullets


@dataclass(frozen=True, slots=True)
class View:
    """What a prompt reads: bullets (oldest), then Y's raw overflow, then X (newest)."""

    bullets: Sequence[Bullet]
    y_raw: Sequence[Item]
    x: Sequence[Item]


class TierStore(Protocol):
    """The storage the tiered queue needs; `memory/store.py` implements it on the ORM.

    Every method acts on one session; `kind` namespaces history and context so they never mix.
    """

    def totals(self, kind: str) -> TierTotals: ...

    def add_to_x(self, kind: str, draft: Draft) -> Item:
        """Store the item's text as a chunk (idempotent by hash) and put the item at the end of X."""
        ...

    def archive(self, kind: str, draft: Draft) -> Item:
        """Store the item straight into the archive (chunk + position), bypassing the tiers."""
        ...

    def move_x_to_y(self, kind: str) -> None:
        """Move every X item to the end of Y's raw tier, order kept."""
        ...

    def items(self, kind: str, tier: Tier) -> list[Item]: ...

    def live_bullets(self, kind: str) -> list[Bullet]: ...

    def commit_compaction(
        self,
        kind: str,
        *,
        base_generation: int,
        archived_positions: Sequence[int],
        bullets: Sequence[Bullet],
    ) -> bool:
        """Replace the live bullets with `bullets` (generation base+1) and archive those raw items.

        The superseded generation is kept, marked. Returns False, changing nothing, when the
        kind's generation is no longer `base_generation` (another compaction got there first).
        """
        ...
