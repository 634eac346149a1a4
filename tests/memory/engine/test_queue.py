from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from memory.engine.hashing import content_hash
from memory.engine.memstore import InMemoryStore
from memory.engine.prompt import SourceItem
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize
from tests.memory.engine.conftest import synthetic_turns


def lazy_summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
    """Cites about 70% of the items, like a real model that ignores the 'cite everything' rule."""
    lines = []
    for start in range(0, len(items), 3):
        group = [i for i in items[start : start + 3] if int(content_hash(i.text)[:2], 16) % 10 < 7]
        if group:
            nums = ", ".join(str(i.number) for i in group)
            lines.append(f"- {group[0].text.split('.')[0]} [sources: {nums}]")
    return "\n".join(lines)


def garbage_summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
    return "I'm sorry, as a language model I cannot help with that.\n[sources: 999]\n- [sources: ]"


def failing_summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
    raise TimeoutError("model did not answer")


def replay(summarize, count=500, x_budget=120, y_budget=300, protected=False):
    store = InMemoryStore()
    queue = TieredQueue(store, x_budget=x_budget, y_budget=y_budget, summarize=summarize)
    overflows, largest, peak_excess = 0, 0, 0
    texts = []
    for role, text in synthetic_turns(count):
        appended = queue.append(role, text, protected=protected)
        texts.append(text)
        largest = max(largest, appended.item.tokens)
        if appended.needs_compaction:
            overflows += 1
            compacted = queue.compact()
            assert compacted is not None and compacted.committed
        totals = store.totals("history")
        peak_excess = max(peak_excess, totals.x + totals.y - (x_budget + y_budget))
    return store, queue, texts, overflows, largest, peak_excess


@pytest.mark.parametrize(
    "summarize", [extractive_summarize, lazy_summarize, garbage_summarize, failing_summarize]
)
def test_tiers_keep_every_text_reachable_through_many_generations(summarize):
    store, queue, texts, overflows, largest, peak_excess = replay(summarize)

    totals = store.totals("history")
    assert overflows >= 20
    assert totals.generation == overflows
    assert peak_excess <= largest
    live = {h for b in store.live_bullets("history") for h in b.hash_refs}
    pending = {i.text for i in store.items("history", "x") + store.items("history", "y")}
    reachable = [
        t for t in texts if t in pending or (content_hash(t) in live and store.chunks[content_hash(t)] == t)
    ]
    assert len(reachable) == 500


def test_old_generations_are_kept_and_marked_superseded():
    store, *_ = replay(extractive_summarize, count=120)
    state = store.kinds["history"]
    assert {b.generation for b in state.bullets} == {state.generation}
    assert state.superseded and all(b.generation < state.generation for b in state.superseded)


def test_x_overflow_moves_all_of_x_to_y_in_one_step():
    store = InMemoryStore()
    queue = TieredQueue(store, x_budget=20, y_budget=10_000, summarize=extractive_summarize)
    first = queue.append("assistant", "one two three four five six seven eight nine ten")
    second = queue.append("assistant", "eleven twelve thirteen fourteen fifteen sixteen")
    third = queue.append("assistant", "seventeen eighteen nineteen twenty twenty-one")

    assert (first.moved_to_y, second.moved_to_y, third.moved_to_y) == (False, False, True)
    assert [i.position for i in store.items("history", "y")] == [0, 1, 2]
    assert store.items("history", "x") == []


PLANTED = [
    "Never deploy on Fridays.",
    "Use British spelling in every document.",
    "The budget ceiling is 4,200 euros.",
    "Always cc Priya on vendor emails.",
    "Do not touch the legacy billing module.",
    "Tests must run without network access.",
    "The launch date is 14 March.",
    "Store timestamps in UTC only.",
]


def plant_and_replay(total: int, protect: bool) -> list[str]:
    store = InMemoryStore()
    queue = TieredQueue(store, x_budget=150, y_budget=400, summarize=extractive_summarize, protect=protect)
    every = total // len(PLANTED)
    planted = 0
    for n, (_role, text) in enumerate(synthetic_turns(total, seed=3)):
        if n % every == 0 and planted < len(PLANTED):
            queue.append("user", f"Constraint: {PLANTED[planted]}")
            planted += 1
        queue.append("assistant", text)
        if queue.needs_compaction():
            queue.compact()
    view = queue.current_view()
    prompt = [b.text for b in view.bullets] + [i.text for i in (*view.y_raw, *view.x)]
    return [c for c in PLANTED if any(f"Constraint: {c}" == line for line in prompt)]


def test_protected_constraints_survive_400_turns_verbatim():
    assert plant_and_replay(400, protect=True) == PLANTED


def test_type_blind_compaction_loses_constraints():
    assert len(plant_and_replay(400, protect=False)) < len(PLANTED)


def test_protected_bullets_are_never_shown_to_the_summariser():
    seen: list[str] = []

    def spy(items, budget=None):
        seen.extend(i.text for i in items)
        return extractive_summarize(items, budget)

    store = InMemoryStore()
    queue = TieredQueue(store, x_budget=40, y_budget=120, summarize=spy)
    for role, text in synthetic_turns(80):
        queue.append(role, text)
        if queue.needs_compaction():
            queue.compact()
    assert seen
    assert not any(re.match(r"Turn \d*[02468]:", t) for t in seen)


def test_a_queue_over_the_same_store_resumes_where_the_last_stopped():
    store, queue, *_ = replay(extractive_summarize, count=90)
    again = TieredQueue(store, x_budget=120, y_budget=300, summarize=extractive_summarize)
    assert again.current_view() == queue.current_view()


def test_context_items_skip_the_tiers():
    store = InMemoryStore()
    queue = TieredQueue(store, kind="context", x_budget=10, y_budget=10, summarize=extractive_summarize)
    appended = queue.append("tool", "x" * 500)
    assert appended.needs_compaction is False
    assert store.totals("context").x == 0
    assert store.all_items("context")[0].text == "x" * 500
    assert store.totals("history").x == 0
