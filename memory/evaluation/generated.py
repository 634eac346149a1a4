"""What the generated evaluation sets share (worksessions.py, assistant_sessions.py): the split
rule, and how a turn, a day and the questions are written in LoCoMo's JSON format."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

SPLITS = ("dev", "holdout", "all")


def in_holdout(number: int) -> bool:
    """The split rule: every third session (3, 6, 9, …) is held out."""
    return number % 3 == 0


def build(split: str, sessions: int, session: Callable[[int], dict]) -> list[dict]:
    """Sessions 1..`sessions` of a split: "dev", "holdout" or "all"."""
    if split not in SPLITS:
        raise ValueError(f"split must be dev, holdout or all, not {split!r}")
    return [
        session(n) for n in range(1, sessions + 1) if split == "all" or in_holdout(n) == (split == "holdout")
    ]


def date_time(when: datetime) -> str:
    """LoCoMo's form: "1:56 pm on 8 May, 2023"."""
    hour = when.hour % 12 or 12
    return f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when.strftime('%B')}, {when.year}"


def day_of(when: datetime) -> str:
    """A temporal question's answer: the day of its evidence turn, "8 May 2023"."""
    return f"{when.day} {when.strftime('%B')} {when.year}"


def row(turn: dict[str, Any], at: datetime) -> dict[str, str]:
    """A turn as the set writes it: speaker and name, its dialogue id, text, role and time."""
    return {
        "speaker": turn["name"],
        "dia_id": turn["dia_id"],
        "text": turn["text"],
        "role": turn["role"],
        "name": turn["name"],
        "date_time": date_time(at),
    }


@dataclass
class Fact:
    """A planted fact: its question and answer, the turns that say it (`parts`, one list a sitting)
    and, of those, its evidence; `distractors`, where a fact has them, are other people's similar
    turns the evidence should come back ahead of (the team channel set's attributed and who)."""

    category: int
    question: str
    answer: str
    parts: list[list[dict]]
    evidence: list[dict] = field(default_factory=list)
    distractors: list[dict] = field(default_factory=list)


def qa(facts: Iterable[Fact]) -> list[dict[str, Any]]:
    """The questions, evidence (and distractors, where a fact has them) by dialogue id; a temporal
    answer is its first evidence turn's day."""
    return [
        {
            "question": f.question,
            "answer": f.answer or f.evidence[0]["_day"],
            "evidence": [t["dia_id"] for t in f.evidence],
            **({"distractors": [t["dia_id"] for t in f.distractors]} if f.distractors else {}),
            "category": f.category,
        }
        for f in facts
    ]


def sittings(rng: random.Random, episodes: list[list[dict]], count: int) -> list[list[list[dict]]]:
    """The episodes cut into `count` sittings of uneven length, never inside an episode."""
    weights = [rng.uniform(0.6, 1.4) for _ in range(count)]
    total, turns = sum(weights), sum(map(len, episodes))
    bounds = [turns * sum(weights[: i + 1]) / total for i in range(count - 1)]
    sittings: list[list[list[dict]]] = [[] for _ in range(count)]
    seen = 0
    for episode in episodes:
        sittings[sum(seen >= b for b in bounds)].append(episode)
        seen += len(episode)
    return sittings
