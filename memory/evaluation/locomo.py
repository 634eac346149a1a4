"""LoCoMo replay and scoring for `manage.py eval_memory` (no Django here: plain data in, figures out).

Format and quirks: docs/evaluation.md, "The data". Category numbers: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial (not scored: there is no evidence to find); the agent work
sessions (worksessions.py) add 6 paraphrase, 7 first-person and 8 decision, and a turn of theirs may
carry its own "role", "name" and "date_time" (a LoCoMo file has none: its replay is unchanged); the
corrections set (corrections.py) adds 9 correction (a fact's current value, after a later correction)
and 10 unchanged (a fact confirmed, not changed); the team channel set (team_channel.py), where
several people share one agent, adds 11 who (the answer is a person: who offered, who volunteered)
and 12 attributed (what one named person asked for, while others asked for similar things); their
questions name those other people's similar turns as `distractors`.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import combinations
from pathlib import Path
from typing import Any

CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    6: "paraphrase",
    7: "first-person",
    8: "decision",
    9: "correction",
    10: "unchanged",
    11: "who",
    12: "attributed",
}
# LoCoMo's: always in a report; the others only when some question is of them.
LOCOMO_CATEGORIES = (1, 2, 3, 4)
_DIA = re.compile(r"^D(\d+):(\d+)$")


@dataclass(frozen=True, slots=True)
class LocomoTurn:
    dia_id: str
    speaker: str
    text: str
    session: int
    date: str
    # The turn's own role ("user", "assistant", "tool") and name, where the data gives them.
    role: str = ""
    name: str = ""

    @property
    def occurred_at(self) -> datetime | None:
        """The sitting's date and time ("1:56 pm on 8 May, 2023"; LoCoMo gives no zone: UTC), or
        None when the date is not in that form (the turn then happened when it is appended)."""
        try:
            return datetime.strptime(self.date, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]
    # The gold answer as given (eval_view looks for it in the prompt view).
    answer: str = ""
    # For a fact changed later (the corrections set's `previous_evidence`): the turns that said
    # what it was before; the evidence should come back ahead of them.
    superseded: tuple[str, ...] = ()
    # For a question about one person among others (the team channel set's `distractors`): other
    # people's similar turns; the evidence should come back ahead of them, but strict does not ask it.
    distractors: tuple[str, ...] = ()


@dataclass(slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[LocomoTurn]
    questions: list[Question]
    dropped_evidence: list[str] = field(default_factory=list)


def turn_text(turn: dict[str, Any]) -> str:
    """The turn as said, with a shared photo's caption (evidence often points at the photo)."""
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def _repair(raw: str) -> list[str]:
    ids = []
    for piece in re.split(r"[;,\s]+", raw.strip()):
        if not piece:
            continue
        piece = piece.replace("D:", "D", 1) if piece.startswith("D:") else piece
        match = _DIA.match(piece)
        if match:
            ids.append(f"D{int(match.group(1))}:{int(match.group(2))}")
        else:
            ids.append(piece)
    return ids


def load(data: Sequence[dict[str, Any]]) -> list[Conversation]:
    """Conversations with repaired evidence ids; ids that name no turn are dropped and listed."""
    conversations: list[Conversation] = []
    for raw in data:
        conv = raw["conversation"]
        numbers = sorted(
            int(k.split("_")[1])
            for k, v in conv.items()
            if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
        )
        turns = [
            LocomoTurn(
                dia_id=t["dia_id"],
                speaker=t["speaker"],
                text=turn_text(t),
                session=n,
                date=str(t.get("date_time") or conv.get(f"session_{n}_date_time", "")),
                role=str(t.get("role", "")),
                name=str(t.get("name", "")),
            )
            for n in numbers
            for t in conv[f"session_{n}"]
        ]
        known = {t.dia_id for t in turns}
        item = Conversation(
            sample_id=str(raw.get("sample_id", f"conv-{len(conversations)}")),
            speakers=(conv["speaker_a"], conv["speaker_b"]),
            turns=turns,
            questions=[],
        )
        for qa in raw["qa"]:
            category = int(qa["category"])
            if category not in CATEGORIES:
                continue
            evidence = []
            for raw_id in qa.get("evidence", []):
                for dia in _repair(str(raw_id)):
                    if dia in known:
                        evidence.append(dia)
                    else:
                        item.dropped_evidence.append(dia)
            if evidence:
                item.questions.append(
                    Question(
                        str(qa["question"]),
                        category,
                        tuple(dict.fromkeys(evidence)),
                        str(qa.get("answer", "")).strip(),
                        tuple(e for e in map(str, qa.get("previous_evidence") or []) if e in known),
                        tuple(e for e in map(str, qa.get("distractors") or []) if e in known),
                    )
                )
        conversations.append(item)
    return conversations


def role_of(conv: Conversation, turn: LocomoTurn) -> str:
    """The role a replay gives a turn: its own where the data gives one, else "user" for the
    first speaker and "assistant" for the other (LoCoMo's two people)."""
    return turn.role or ("user" if turn.speaker == conv.speakers[0] else "assistant")


def name_of(turn: LocomoTurn) -> str:
    """The name a replay gives a turn: its own where the data gives one, else its speaker."""
    return turn.name or turn.speaker


def shown(numbers: Iterable[int]) -> dict[int, str]:
    """The categories a report has rows for: LoCoMo's four always, the others when asked."""
    present = set(numbers)
    return {n: name for n, name in CATEGORIES.items() if n in LOCOMO_CATEGORIES or n in present}


@dataclass(slots=True)
class Outcome:
    conversation: str
    category: int
    stored: bool
    strict: bool
    per_turn: float
    tokens: int
    latency_ms: float
    question: str = ""
    evidence: tuple[str, ...] = ()
    returned: tuple[str, ...] = ()
    # For a question about a changed fact: whether the evidence came back before every superseded
    # turn (`ahead`), and as the first hit (`first`); None for any other question.
    ahead: bool | None = None
    first: bool | None = None
    # The same against a question's distractors (other people's similar turns); None without them.
    others_ahead: bool | None = None
    others_first: bool | None = None


def ahead_of(order: Sequence[int], evidence: Sequence[int], others: Sequence[int]) -> tuple[bool, bool]:
    """Whether the evidence's best hit comes before every other turn's (a question's superseded
    turns or its distractors; one not returned comes after all), and whether it is the first hit."""
    rank = {position: n for n, position in reversed(list(enumerate(order)))}
    best = min((rank.get(p, len(order)) for p in evidence), default=len(order))
    rival = min((rank.get(p, len(order)) for p in others), default=len(order))
    return best < len(order) and best < rival, best == 0


def _pct(values: Iterable[float]) -> float:
    values = list(values)
    return round(100.0 * sum(values) / len(values), 1) if values else 0.0


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return round(values[0], 2)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1], 2)


def summarise(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Figures for a set of outcomes, percentages as numbers from 0 to 100."""
    latencies = [o.latency_ms for o in outcomes]
    return {
        "n": len(outcomes),
        "store": _pct(o.stored for o in outcomes),
        "strict": _pct(o.strict for o in outcomes),
        "per_turn": _pct(o.per_turn for o in outcomes),
        "tokens_mean": round(statistics.fmean(o.tokens for o in outcomes), 1) if outcomes else 0.0,
        "latency_ms_p50": _quantile(latencies, 0.50),
        "latency_ms_p95": _quantile(latencies, 0.95),
    }


def _order(pairs: Sequence[tuple[bool | None, bool | None]]) -> dict[str, Any] | None:
    """How often the evidence came ahead of the other turns, and first, over the questions that
    have other turns (an (ahead, first) pair not None); None when none has."""
    judged = [(bool(ahead), bool(first)) for ahead, first in pairs if ahead is not None]
    if not judged:
        return None
    return {"n": len(judged), "ahead": _pct(a for a, _ in judged), "first": _pct(f for _, f in judged)}


def report(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    overall = summarise(outcomes)
    return {
        "superseded": _order([(o.ahead, o.first) for o in outcomes]),
        "distractors": _order([(o.others_ahead, o.others_first) for o in outcomes]),
        "n": overall.pop("n"),
        "overall": overall,
        "categories": {
            name: summarise([o for o in outcomes if o.category == number])
            for number, name in shown(o.category for o in outcomes).items()
        },
    }


def leave_two_out(outcomes: Sequence[Outcome]) -> dict[str, Any] | None:
    """Strict coverage on every pair of held-out conversations, by category: the mean over the
    pairs and its spread. None with fewer than three conversations (no 3/2 split exists).

    The ranking's settings are fixed, not fitted per split, so each pair's figure is what those
    settings score on two conversations; a change is kept only when this mean rises.
    """
    names = list(dict.fromkeys(o.conversation for o in outcomes))
    if len(names) < 3:
        return None
    pairs = list(combinations(names, 2))
    figures: dict[str, Any] = {"splits": len(pairs), "pairs": [list(p) for p in pairs]}
    categories = shown(o.category for o in outcomes)
    for label, number in (("overall", None), *((name, n) for n, name in categories.items())):
        scores = []
        for pair in pairs:
            chosen = [o for o in outcomes if o.conversation in pair and number in (None, o.category)]
            scores.append(_pct(o.strict for o in chosen))
        figures[label] = {
            "mean": round(statistics.fmean(scores), 1),
            "min": min(scores),
            "max": max(scores),
            "sd": round(statistics.pstdev(scores), 1),
            "per_pair": scores,
        }
    return figures


def table(figures: dict[str, Any]) -> str:
    """The printed table: one row per category and overall."""
    head = f"{'category':<12} {'n':>5} {'store':>7} {'strict':>7} {'per-turn':>9} {'tokens':>7} {'p50 ms':>7} {'p95 ms':>7}"
    rows = [head, "-" * len(head)]
    entries = list(figures["categories"].items())
    entries.append(("overall", {**figures["overall"], "n": figures["n"]}))
    for name, f in entries:
        rows.append(
            f"{name:<12} {f['n']:>5} {f['store']:>6.1f}% {f['strict']:>6.1f}% {f['per_turn']:>8.1f}% "
            f"{f['tokens_mean']:>7.0f} {f['latency_ms_p50']:>7.1f} {f['latency_ms_p95']:>7.1f}"
        )
    held = figures.get("leave_two_out")
    if held:
        rows.append("")
        rows.append(f"leave-two-out strict, {held['splits']} splits (3 conversations in, 2 scored):")
        head = f"{'category':<12} {'mean':>7} {'min':>7} {'max':>7} {'sd':>6}"
        rows += [head, "-" * len(head)]
        for name in (*figures["categories"], "overall"):
            f = held[name]
            rows.append(f"{name:<12} {f['mean']:>6.1f}% {f['min']:>6.1f}% {f['max']:>6.1f}% {f['sd']:>6.1f}")
    return "\n".join(rows)


def write(data: list[dict], out: str, split: str) -> str:
    """Write a generated set (LoCoMo's format) to `out`; the line that says what it holds."""
    Path(out).write_text(json.dumps(data, indent=1, ensure_ascii=False))
    turns = sum(len(c.turns) for c in load(data))
    counts = Counter(q["category"] for s in data for q in s["qa"])
    per = ", ".join(f"{CATEGORIES[n]} {counts[n]}" for n in sorted(counts))
    return f"{out}: {len(data)} sessions ({split}), {turns} turns, {sum(counts.values())} questions ({per})"
