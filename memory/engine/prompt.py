"""What a summariser is given: numbered items (`SourceItem`) and, for a language model, the
instruction (`build_prompt`) whose reply `reply_parser` reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from .types import calendar_day


@dataclass(frozen=True, slots=True)
class SourceItem:
    """A numbered item as the summariser sees it; `role` is "bullet" for a prior bullet.

    `name` and `occurred_at` say who said it and when (a turn's own; empty for a bullet).
    `segment` counts the turns the view keeps word for word before it (the person's, pinned ones,
    quotes of the person's earlier words): a bullet drawing on two segments would show an answer
    before the words it answers."""

    number: int
    role: str
    text: str
    name: str = ""
    occurred_at: datetime | None = None
    segment: int = 0


class Summarizer(Protocol):
    """Numbered items to a reply of bullets citing them (`[sources: …]`), in about `budget` tokens
    (None: the summariser's own judgement). A reply over budget is fitted by the engine."""

    def __call__(self, items: Sequence[SourceItem], budget: int | None = None) -> str: ...


PROMPT_HEADER = (
    "Summarise the numbered items below into a short list of bullet points for an agent's memory.\n"
    "Rules: one fact, decision or result per bullet; keep names, numbers, dates, file names and error\n"
    "codes exactly; start every bullet with the day and who said it, as the item gives them\n"
    '("8 May 2023 · Caroline: adopted a grey cat, Miso"), and turn relative days ("yesterday")\n'
    "into dates; keep the names and dates of earlier bullets; end every bullet with [sources: N, M]\n"
    "naming the item numbers it draws on; every item must be cited by at least one bullet. Reply\n"
    "with the bullets only, one per line, each starting with '- '.\n"
)
# Between two items came turns kept word for word (the person's, or pinned; not shown here): a
# bullet joining items across them would show the answer before the question.
PERSON_SPOKE = (
    "(here came turns kept word for word, the person's or pinned; no bullet may cite items on both "
    "sides of this line)"
)


def source_label(item: SourceItem) -> str:
    """Who said an item and when, as the summariser's prompt shows it: "user · Caroline · 8 May 2023"."""
    label = [item.role]
    if item.name:
        label.append(" ".join(item.name.split()))
    if item.occurred_at is not None:
        label.append(calendar_day(item.occurred_at))
    return " · ".join(label)


def build_prompt(items: Sequence[SourceItem], budget: int | None = None) -> str:
    """The instruction a language-model summariser receives for these items; where turns kept word
    for word come between two of them (`segment`), a line says so."""
    room = f"Keep the whole list within about {budget} tokens.\n" if budget else ""
    lines: list[str] = []
    for n, item in enumerate(items):
        if n and item.segment != items[n - 1].segment:
            lines.append(PERSON_SPOKE)
        lines.append(f"[{item.number}] ({source_label(item)}) {item.text}")
    return PROMPT_HEADER + room + "\nItems:\n" + "\n".join(lines)
