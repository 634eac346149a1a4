"""eval_compaction's harness: plant constraints in a synthetic conversation, replay, count survivors.

The constraint-survival benchmark (docs/decisions.md, "A person's words"). Eight constraints are spoken by the person, spread through
a conversation whose other turns are ordinary project chatter: short requests from the person and
longer work reports from the assistant. Each policy replays the same conversation through a
`TieredQueue` over an `InMemoryStore` with the deterministic extractive summariser, so the policy is
measured and not the model of the day. A constraint survives when its sentence is still there,
verbatim, in the final `current_view()` (bullets, Y's raw overflow, X) — what the next prompt reads.

Pure and deterministic: the same arguments give the same figures on every machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory.engine import bm25
from memory.engine import tokens as tok
from memory.engine.compaction import REABSTRACT
from memory.engine.memstore import InMemoryStore
from memory.engine.prompt import Summarizer
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize
from memory.engine.types import View
from memory.evaluation.synthetic import conversation

CONSTRAINTS: tuple[str, ...] = (
    "Never deploy to production on a Friday.",
    "Use British spelling in every customer-facing document.",
    "The total budget must stay under 4,200 euros.",
    "Always copy Priya Raman on emails to vendors.",
    "Do not modify anything in the legacy billing module.",
    "The test suite must run without network access.",
    "The public launch date is fixed at 14 March.",
    "Store every timestamp in UTC, never in local time.",
)

LENGTHS: tuple[int, ...] = (120, 400)


@dataclass(frozen=True, slots=True)
class Budget:
    name: str
    x: int
    y: int


# "normal" lets several assistant reports sit in X and Y between compactions; "tight" compacts every
# few turns. Both are far below the production 24K/80K so that 120 turns already compact repeatedly.
BUDGETS: tuple[Budget, ...] = (Budget("normal", x=1500, y=4000), Budget("tight", x=400, y=1000))


@dataclass(frozen=True, slots=True)
class Arm:
    """One row of the table: a policy at a budget, with or without re-abstraction of old bullets."""

    label: str
    protect: bool
    budget: Budget
    reabstract: bool = REABSTRACT
    # None: protected turns unbounded (the seed's policy, what the seed rows measure).
    protected_share: float | None = None


@dataclass(slots=True)
class Outcome:
    turns: int
    kept: list[str]
    generations: int
    view_tokens: int
    lost: list[str] = field(default_factory=list)
    # Of `kept`, those that survive inside a bullet (they went through compaction) rather than raw.
    in_bullets: list[str] = field(default_factory=list)
    # Those whose turn a keyword recall of the constraint returns among its first RECALL_K hits.
    recalled: list[str] = field(default_factory=list)
    # The tokens of all the person's turns of the conversation, against which Y is small.
    person_tokens: int = 0
    # The most the view held at any moment of the replay, and the largest single turn: the view's
    # bound is X + Y + that turn.
    peak_view_tokens: int = 0
    largest_turn: int = 0


def arms(*, abstract_once: bool = False) -> list[Arm]:
    """The seed's four rows; with `abstract_once`, the same four with REABSTRACT off after them."""
    normal, tight = BUDGETS
    rows = [
        Arm("type-blind", protect=False, budget=normal),
        Arm("type-blind, tight budget", protect=False, budget=tight),
        Arm("protected", protect=True, budget=normal),
        Arm("protected, tight budget", protect=True, budget=tight),
    ]
    if abstract_once:
        rows += [
            Arm(f"{a.label}, abstract once", protect=a.protect, budget=a.budget, reabstract=False)
            for a in rows
        ]
    return rows


def _flat(text: str) -> str:
    return " ".join(text.split())


def surviving(lines: Sequence[str], constraints: Sequence[str] = CONSTRAINTS) -> list[str]:
    """The constraints whose sentence appears verbatim (whitespace aside) in one of `lines`."""
    flat = [_flat(line) for line in lines]
    return [c for c in constraints if any(_flat(c) in line for line in flat)]


def replay(
    arm: Arm,
    turns: int,
    *,
    summarize: Summarizer = extractive_summarize,
    seed: int = 3,
    constraints: Sequence[str] = CONSTRAINTS,
) -> Outcome:
    """Replay the conversation under `arm`, compacting whenever Y overflows; count what survives."""
    store = InMemoryStore()
    queue = TieredQueue(
        store,
        x_budget=arm.budget.x,
        y_budget=arm.budget.y,
        summarize=summarize,
        protect=arm.protect,
        reabstract=arm.reabstract,
        protected_share=arm.protected_share,
    )
    turns_of = conversation(turns, seed=seed, constraints=constraints)
    peak = largest = 0
    for role, text in turns_of:
        appended = queue.append(role, text)
        largest = max(largest, appended.item.tokens)
        peak = max(peak, _view_tokens(store))
        if appended.needs_compaction:
            queue.compact()
            peak = max(peak, _view_tokens(store))
    view = queue.current_view()
    lines = [b.text for b in view.bullets] + [i.text for i in (*view.y_raw, *view.x)]
    kept = surviving(lines, constraints)
    totals = store.totals("history")
    return Outcome(
        turns=turns,
        kept=kept,
        lost=[c for c in constraints if c not in kept],
        generations=totals.generation,
        view_tokens=totals.x + totals.y,
        in_bullets=surviving([b.text for b in view.bullets], constraints),
        recalled=recalled(store, view, constraints),
        person_tokens=sum(tok.count_tokens(t) for r, t in turns_of if r == "user"),
        peak_view_tokens=peak,
        largest_turn=largest,
    )


def _view_tokens(store: InMemoryStore) -> int:
    totals = store.totals("history")
    return totals.x + totals.y


# A constraint is found when its turn is among the first RECALL_K keyword hits.
RECALL_K = 3


def recalled(store: InMemoryStore, view: View, constraints: Sequence[str]) -> list[str]:
    """The constraints a keyword recall finds: BM25 (recall's keyword ranking) over recall's stage-1
    candidates — every chunk a live bullet cites, and the live Y raw and X — asked each constraint."""
    texts = sorted(
        {store.chunks[h] for b in view.bullets for h in b.hash_refs}
        | {i.text for i in (*view.y_raw, *view.x)}
    )
    index = bm25.Index(list(enumerate(texts)))
    found = []
    for constraint in constraints:
        hits = index.search(bm25.words(constraint), RECALL_K)
        if any(_flat(constraint) in _flat(texts[i]) for i, _ in hits):
            found.append(constraint)
    return found


# The bounded rows: the default share (OTTO_PROTECTED_SHARE), at lengths where the person's turns
# alone are several times the tight Y budget.
BOUNDED_SHARE = 0.5
BOUNDED_LENGTHS: tuple[int, ...] = (120, 400, 1200)


def bounded_arms() -> list[Arm]:
    normal, tight = BUDGETS
    return [
        Arm(f"protected, share {BOUNDED_SHARE}", protect=True, budget=normal, protected_share=BOUNDED_SHARE),
        Arm(
            f"protected, share {BOUNDED_SHARE}, tight budget",
            protect=True,
            budget=tight,
            protected_share=BOUNDED_SHARE,
        ),
    ]


def run_bounded(
    *, lengths: Sequence[int] = BOUNDED_LENGTHS, summarize: Summarizer = extractive_summarize, seed: int = 3
) -> list[tuple[Arm, list[Outcome]]]:
    """The bounded-protection arms at every length."""
    return [
        (arm, [replay(arm, n, summarize=summarize, seed=seed) for n in lengths]) for arm in bounded_arms()
    ]


def bounded_table(results: Sequence[tuple[Arm, Sequence[Outcome]]], total: int = len(CONSTRAINTS)) -> str:
    """One row per bounded arm: per length, verbatim in the view · found by recall, and how many
    times Y the person's turns are."""
    lengths = [o.turns for o in results[0][1]] if results else []
    width = max([len("policy")] + [len(arm.label) for arm, _ in results]) + 2
    cell = 34
    header = "policy".ljust(width) + "".join(f"{n} turns: in view · recalled".ljust(cell) for n in lengths)
    rows = [
        arm.label.ljust(width)
        + "".join(
            f"{len(o.kept)}/{total} · {len(o.recalled)}/{total} ({o.person_tokens / arm.budget.y:.1f}× Y)".ljust(
                cell
            )
            for o in outcomes
        )
        for arm, outcomes in results
    ]
    return "\n".join(line.rstrip() for line in [header, *rows])


def run(
    *,
    lengths: Sequence[int] = LENGTHS,
    abstract_once: bool = False,
    summarize: Summarizer = extractive_summarize,
    seed: int = 3,
) -> list[tuple[Arm, list[Outcome]]]:
    """Every arm at every length."""
    return [
        (arm, [replay(arm, n, summarize=summarize, seed=seed) for n in lengths])
        for arm in arms(abstract_once=abstract_once)
    ]


def table(results: Sequence[tuple[Arm, Sequence[Outcome]]], total: int = len(CONSTRAINTS)) -> str:
    """The seed's table: one row per arm, `kept/total` per length."""
    lengths = [o.turns for o in results[0][1]] if results else []
    width = max([len("policy")] + [len(arm.label) for arm, _ in results]) + 2
    header = "policy".ljust(width) + "".join(f"{n} turns".ljust(12) for n in lengths)
    rows = [
        arm.label.ljust(width) + "".join(f"{len(o.kept)}/{total}".ljust(12) for o in outcomes)
        for arm, outcomes in results
    ]
    return "\n".join(line.rstrip() for line in [header, *rows])
