"""Summarisers: callables from numbered items to a bullet reply with `[sources: …]` citations.

The offline default is extractive and deterministic: for each run of consecutive items it picks the
sentence that shares the most vocabulary with the rest of the batch and cites the items of that run.
Real sentences, honest citations, no model.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from .compaction import SourceItem, Summarizer

GROUP_SIZE = 4
MAX_SENTENCE_WORDS = 40

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_STOP = frozenset(
    """a an and are as at be been but by for from had has have he her his i if in into is it its
    me my of on or our she so that the their them then there they this to was we were what when
    which who will with you your do did does not no yes just really too very can could would should
    about all also am any get got like oh okay ok one some than that's i'm it's you're""".split()
)


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP]


def _sentences(text: str) -> list[str]:
    parts = [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]
    return parts or ([text.strip()] if text.strip() else [])


def _clip(sentence: str) -> str:
    words = sentence.split()
    if len(words) <= MAX_SENTENCE_WORDS:
        return " ".join(words)
    return " ".join(words[:MAX_SENTENCE_WORDS]) + " …"


def extractive_summarize(items: Sequence[SourceItem]) -> str:
    """One bullet per run of GROUP_SIZE items: the run's most central sentence, citing the run."""
    batch = Counter(w for item in items for w in set(_words(item.text)))
    lines: list[str] = []
    for start in range(0, len(items), GROUP_SIZE):
        group = items[start : start + GROUP_SIZE]
        best, best_score = "", -1.0
        for item in group:
            for sentence in _sentences(item.text):
                words = _words(sentence)
                if not words:
                    continue
                # Centrality per word, damped by length so one long sentence does not always win.
                score = sum(math.log1p(batch[w]) for w in set(words)) / math.sqrt(len(words) + 1)
                if score > best_score:
                    best, best_score = sentence, score
        if not best:
            best = " ".join(group[0].text.split())
        numbers = ", ".join(str(item.number) for item in group)
        lines.append(f"- {_clip(best)} [sources: {numbers}]")
    return "\n".join(lines)


def offline() -> Summarizer:
    """The default summariser: extractive, deterministic, needs no model or network."""
    return extractive_summarize
