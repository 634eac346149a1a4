"""eval_view's scoring: is a question's answer in what the prompt reads? (no Django here)

The prompt view (`GET /sessions/{id}/context`'s `text`) is what every model call reads without
asking. A question is scored when its gold answer, normalised (lower case, punctuation out, spaces
folded), occurs in the conversation as the view renders turns (each turn with its speaker, each
day named where it changes, `engine.queue.turn_label`); it is contained when it occurs in the
text scored. Beside the view, two baselines a replay gets for free: the newest raw turns that fit
the view's own size (plain truncation at the same cost), and the newest that fit the whole X + Y
budget.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from memory.engine import tokens as tok
from memory.engine.queue import render_entry, turn_label
from memory.evaluation import locomo

# The three texts scored for every question, in the order the table prints them.
COLUMNS = ("view", "recent_same_size", "recent_whole_budget")
_NOT_WORD = re.compile(r"[^\w\s]+")


def normalise(text: str) -> str:
    """Lower case, punctuation out, whitespace folded, padded so a match is on word boundaries."""
    return " " + " ".join(_NOT_WORD.sub(" ", text.lower()).split()) + " "


def contains(text: str, answer: str) -> bool:
    """Whether the normalised `answer` occurs in `text` (already normalised) on word boundaries."""
    folded = normalise(answer)
    return folded.strip() != "" and folded in text


def role_of(conv: locomo.Conversation, turn: locomo.LocomoTurn) -> str:
    """The role a replay gives a turn (its own, else the first speaker is the user: locomo.role_of)."""
    return locomo.role_of(conv, turn)


def render_turns(conv: locomo.Conversation, turns: Sequence[locomo.LocomoTurn]) -> str:
    """The turns as the prompt view renders raw turns: role, speaker, the day where it changes."""
    entries, day = [], ""
    for turn in turns:
        label, day = turn_label(role_of(conv, turn), locomo.name_of(turn), turn.occurred_at, day)
        entries.append(render_entry(label, turn.text))
    return "\n".join(entries)


def newest_within(turns: Sequence[locomo.LocomoTurn], tokens: int) -> list[locomo.LocomoTurn]:
    """The newest turns whose texts' tokens (as the view counts a turn) sum to at most `tokens`."""
    kept: list[locomo.LocomoTurn] = []
    spent = 0
    for turn in reversed(turns):
        cost = tok.count_tokens(turn.text)
        if spent + cost > tokens:
            break
        kept.append(turn)
        spent += cost
    return kept[::-1]


@dataclass(frozen=True, slots=True)
class Probe:
    """A question whose answer occurs in the conversation so far."""

    conversation: str
    category: int
    question: str
    answer: str


def probes(conv: locomo.Conversation, turns: Sequence[locomo.LocomoTurn]) -> list[Probe]:
    """The conversation's scored questions whose answer occurs in `turns` (rendered)."""
    seen = normalise(render_turns(conv, turns))
    return [
        Probe(conv.sample_id, q.category, q.question, q.answer)
        for q in conv.questions
        if q.answer and contains(seen, q.answer)
    ]


@dataclass(frozen=True, slots=True)
class Reading:
    """The view read at one moment (after the last turn, or after a sitting) and what it held."""

    conversation: str
    sitting: int
    view_text: str
    view_tokens: int
    tokens: dict[str, int]


@dataclass(slots=True)
class Outcome:
    conversation: str
    category: int
    question: str
    answer: str
    found: dict[str, bool]


def score(
    conv: locomo.Conversation, reading: Reading, *, x_budget: int, y_budget: int
) -> tuple[list[Outcome], dict[str, str]]:
    """Score the questions answerable from the turns up to the reading's sitting against the view
    and both baselines; also return the three texts (for --show)."""
    turns = [t for t in conv.turns if t.session <= reading.sitting]
    texts = {
        "view": reading.view_text,
        "recent_same_size": render_turns(conv, newest_within(turns, reading.view_tokens)),
        "recent_whole_budget": render_turns(conv, newest_within(turns, x_budget + y_budget)),
    }
    folded = {name: normalise(text) for name, text in texts.items()}
    outcomes = [
        Outcome(
            p.conversation,
            p.category,
            p.question,
            p.answer,
            {name: contains(folded[name], p.answer) for name in COLUMNS},
        )
        for p in probes(conv, turns)
    ]
    return outcomes, texts


def _pct(values: Iterable[bool]) -> float:
    values = list(values)
    return round(100.0 * sum(values) / len(values), 1) if values else 0.0


def report(outcomes: Sequence[Outcome], readings: Sequence[Reading]) -> dict[str, Any]:
    """Containment per category and overall for each column, the views' token use, leave-two-out."""

    def figures(chosen: Sequence[Outcome]) -> dict[str, Any]:
        return {"n": len(chosen), **{name: _pct(o.found[name] for o in chosen) for name in COLUMNS}}

    view_tokens = [r.view_tokens for r in readings]
    return {
        "n": len(outcomes),
        "overall": figures(outcomes),
        "categories": {
            name: figures([o for o in outcomes if o.category == number])
            for number, name in locomo.shown(o.category for o in outcomes).items()
        },
        "view_tokens": {
            "mean": round(statistics.fmean(view_tokens), 1) if view_tokens else 0.0,
            "min": min(view_tokens, default=0),
            "max": max(view_tokens, default=0),
        },
        "leave_two_out": leave_two_out(outcomes),
    }


def leave_two_out(outcomes: Sequence[Outcome]) -> dict[str, Any] | None:
    """Each column's containment on every pair of conversations: mean, min, max. None with fewer
    than three conversations (as eval_memory's)."""
    names = list(dict.fromkeys(o.conversation for o in outcomes))
    if len(names) < 3:
        return None
    pairs = list(combinations(names, 2))
    held: dict[str, Any] = {"splits": len(pairs)}
    for column in COLUMNS:
        scores = [_pct(o.found[column] for o in outcomes if o.conversation in pair) for pair in pairs]
        held[column] = {"mean": round(statistics.fmean(scores), 1), "min": min(scores), "max": max(scores)}
    return held


def table(figures: dict[str, Any]) -> str:
    """The printed table: one row per category and overall, a column per text scored."""
    head = f"{'category':<12} {'n':>5} {'view':>7} {'recent, same size':>18} {'recent, X + Y':>14}"
    rows = [head, "-" * len(head)]
    entries = list(figures["categories"].items())
    entries.append(("overall", figures["overall"]))
    for name, f in entries:
        rows.append(
            f"{name:<12} {f['n']:>5} {f['view']:>6.1f}% {f['recent_same_size']:>17.1f}% "
            f"{f['recent_whole_budget']:>13.1f}%"
        )
    held = figures.get("leave_two_out")
    if held:
        rows.append("")
        rows.append(f"leave-two-out, {held['splits']} pairs of conversations: mean (min–max)")
        for column in COLUMNS:
            f = held[column]
            rows.append(f"  {column:<22} {f['mean']:>5.1f}% ({f['min']:.1f}–{f['max']:.1f})")
    v = figures["view_tokens"]
    rows.append(f"\nthe view's tokens: mean {v['mean']:.0f}, min {v['min']}, max {v['max']}")
    return "\n".join(rows)
