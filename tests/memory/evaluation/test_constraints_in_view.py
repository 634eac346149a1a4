"""A person's constraints stay in the view, worded unlike eval_compaction's and among ten times as
many ordinary turns of the person (eval_compaction's longest row has 600)."""

from __future__ import annotations

import random

import pytest

from memory.engine.memstore import InMemoryStore
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize
from memory.evaluation.synthetic import chatter

# The engine's queue in memory, no database: once is enough (`make test`, not `make test-postgres`).
pytestmark = pytest.mark.sqlite_pass

CONSTRAINTS = [
    "My daughter has a severe nut allergy, so no recipe may contain peanuts or almonds.",
    "Don't ever reformat the files under migrations/ — they are applied as they are.",
    "Reports go out in Spanish only.",
    "We cannot spend more than 1,500 dollars on cloud credits this quarter.",
    "I'd rather you ask me before deleting any branch.",
    "The grant application is due by 15 October, no extensions.",
    "Always keep Hiroshi in the loop on anything touching payroll.",
    "Please make sure passwords never appear in the logs.",
]
# What a person says all day: questions, thanks, one-off requests, remarks, plans.
ORDINARY = [
    "Can you take a look at {thing} when you get a minute?",
    "Thanks, that's exactly what I needed for {thing}.",
    "What's the status of {thing}?",
    "Hmm, {thing} still looks off to me.",
    "Send me a summary of {thing} when it's ready.",
    "I had a call with {person} about {thing}, it went fine.",
    "Let's revisit {thing} on Thursday.",
    "Great work on {thing}!",
    "Could you rerun the checks on {thing}?",
    "Why did {thing} fail last night?",
    "Run {thing} once more and tell me what you see.",
    "I'm heading out for lunch, back in an hour.",
    "Do you think {thing} is worth the effort?",
    "{person} says {thing} can wait until next sprint.",
    "Ok, merge {thing} then.",
    "I don't remember why we changed {thing}.",
]
THINGS = [
    "the billing export",
    "the search page",
    "the onboarding flow",
    "the nightly backup",
    "the API docs",
    "the mobile build",
    "the pricing table",
    "the cache layer",
    "the release notes",
    "the signup form",
]
PEOPLE = ["Ines", "Kwame", "Lena", "Raj", "Sofia", "Tom"]


def conversation(ordinary_turns: int, *, seed: int = 11) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    replies = [
        text
        for role, text in chatter(2 * ordinary_turns + 2 * len(CONSTRAINTS), seed=seed)
        if role == "assistant"
    ]
    person = [
        rng.choice(ORDINARY).format(thing=rng.choice(THINGS), person=rng.choice(PEOPLE))
        for _ in range(ordinary_turns)
    ]
    step = ordinary_turns // len(CONSTRAINTS)
    for k, constraint in enumerate(CONSTRAINTS):
        person.insert(k * (step + 1) + step // 3, constraint)
    turns: list[tuple[str, str]] = []
    for said, reply in zip(person, replies, strict=False):
        turns += [("user", said), ("assistant", reply)]
    return turns


def test_constraints_worded_otherwise_stay_verbatim_among_ten_times_the_ordinary_turns():
    x_budget, y_budget = 400, 1000
    store = InMemoryStore()
    queue = TieredQueue(
        store, x_budget=x_budget, y_budget=y_budget, summarize=extractive_summarize, protected_share=0.5
    )
    turns = conversation(6000)
    assert sum(role == "user" for role, _ in turns) == 6000 + len(CONSTRAINTS)
    peak = largest = 0
    for role, text in turns:
        appended = queue.append(role, text)
        largest = max(largest, appended.item.tokens)
        if appended.needs_compaction:
            queue.compact()
        totals = store.totals("history")
        peak = max(peak, totals.x + totals.y)

    view = queue.current_view()
    # Each constraint's turn is still there whole, as the person said it: a protected bullet or a
    # raw turn, not merely a quote of it.
    verbatim = [b.text for b in view.bullets if b.protected] + [i.text for i in (*view.y_raw, *view.x)]
    assert [c for c in CONSTRAINTS if c not in verbatim] == []
    assert peak <= x_budget + y_budget + largest
    # The person's ordinary turns did leave: the share is bounded, not the constraints kept by luck.
    assert store.totals("history").generation > 100
    assert sum(1 for b in view.bullets if b.protected) < 60
