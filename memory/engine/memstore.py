"""An in-memory TierStore for engine tests and benchmarks (one session)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .types import Bullet, Draft, Item, Tier, TierTotals


@dataclass
class _KindState:
    x: list[Item] = field(default_factory=list)
    y: list[Item] = field(default_factory=list)
    archived: list[Item] = field(default_factory=list)
    bullets: list[Bullet] = field(default_factory=list)
    superseded: list[Bullet] = field(default_factory=list)
    generation: int = 0
    next_position: int = 0


class InMemoryStore:
    """Implements `types.TierStore` with lists; chunks are a dict keyed by content hash."""

    def __init__(self) -> None:
        self.kinds: dict[str, _KindState] = {}
        self.chunks: dict[str, str] = {}

    def _state(self, kind: str) -> _KindState:
        return self.kinds.setdefault(kind, _KindState())

    def totals(self, kind: str) -> TierTotals:
        s = self._state(kind)
        return TierTotals(
            x=sum(i.tokens for i in s.x),
            y_raw=sum(i.tokens for i in s.y),
            bullets=sum(b.tokens for b in s.bullets),
            protected=sum(b.tokens for b in s.bullets if b.protected),
            generation=s.generation,
        )

    def _place(self, kind: str, draft: Draft) -> Item:
        s = self._state(kind)
        self.chunks.setdefault(draft.hash, draft.text)
        item = Item(
            position=s.next_position,
            role=draft.role,
            text=draft.text,
            hash=draft.hash,
            tokens=draft.tokens,
            protected=draft.protected,
            meta=draft.meta,
            name=draft.name,
            occurred_at=draft.occurred_at,
            pinned=draft.pinned,
        )
        s.next_position += 1
        return item

    def add_to_x(self, kind: str, draft: Draft) -> Item:
        item = self._place(kind, draft)
        self._state(kind).x.append(item)
        return item

    def archive(self, kind: str, draft: Draft) -> Item:
        item = self._place(kind, draft)
        self._state(kind).archived.append(item)
        return item

    def move_x_to_y(self, kind: str) -> None:
        s = self._state(kind)
        s.y.extend(s.x)
        s.x.clear()

    def items(self, kind: str, tier: Tier) -> list[Item]:
        s = self._state(kind)
        return list(s.x if tier == "x" else s.y)

    def live_bullets(self, kind: str) -> list[Bullet]:
        return list(self._state(kind).bullets)

    def commit_compaction(
        self,
        kind: str,
        *,
        base_generation: int,
        archived_positions: Sequence[int],
        bullets: Sequence[Bullet],
    ) -> bool:
        s = self._state(kind)
        if s.generation != base_generation:
            return False
        gone = set(archived_positions)
        s.archived.extend(i for i in s.y if i.position in gone)
        s.y = [i for i in s.y if i.position not in gone]
        s.superseded.extend(s.bullets)
        s.bullets = list(bullets)
        s.generation = base_generation + 1
        return True

    def all_items(self, kind: str) -> list[Item]:
        s = self._state(kind)
        return sorted(s.archived + s.y + s.x, key=lambda i: i.position)
