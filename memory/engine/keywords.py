"""Small-store ranking: by meaning where a vector of the current model exists, by words otherwise.

Error memory (lessons) and scoped notes each hold a few hundred records per user, too few for an
index: a lookup scores every candidate. This module is that scoring, shared by both. Each store
brings its own word score (what counts as a match differs) and its own thresholds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"[a-z0-9]+(?:[._'-][a-z0-9]+)*")

Vector = npt.NDArray[np.float32]


class Record(Protocol):
    """What ranking needs of a stored record: ties go to the newest, then the highest id."""

    @property
    def updated_at(self) -> datetime: ...

    @property
    def pk(self) -> int: ...


R = TypeVar("R", bound=Record)


def words(text: str, stopwords: frozenset[str]) -> set[str]:
    """Lower-cased word tokens of two characters or more, minus `stopwords`.

    A word keeps its inner dots, underscores, apostrophes and hyphens ("billing_v2.py", "don't").
    """
    return {w for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in stopwords}


def best_first(scored: Iterable[tuple[float, R]]) -> list[tuple[float, R]]:
    """Highest score first; on a tie the most recently updated, then the highest id."""
    return sorted(scored, key=lambda p: (-p[0], -p[1].updated_at.timestamp(), -p[1].pk))


def rank(
    records: Sequence[R],
    *,
    query_vector: Vector | None,
    vector_of: Callable[[R], Vector | None],
    word_score: Callable[[R], float],
    least_cosine: float,
    least_words: float,
    exact: Callable[[R], bool] | None = None,
    words_below_cosine: bool = False,
    best_from: float | None = None,
) -> list[tuple[float, R]]:
    """(score, record) best first, the unrelated left out.

    Without a query vector every record is scored by `word_score` and kept from `least_words` (and
    above 0). With one, a record whose `vector_of` is not None scores its cosine and is kept from
    `least_cosine`; `exact(record)` scores 1 whatever the cosine (a query equal to a note's key).
    Any other record is scored by words, capped at 1 so that it never outranks a perfect cosine.

    A search a person types wants more than a lookup (docs/lessons-and-notes.md, "Searching the
    list"): `words_below_cosine` also lets a vectored record under `least_cosine` in when its words
    match, at its cosine (meaning still ranks it); `best_from` lets the closest vectored record in
    from that cosine even under `least_cosine` (a one-word query is far from any sentence, its
    answer included).
    """
    if query_vector is None:
        return best_first((s, r) for r in records if (s := word_score(r)) > 0 and s >= least_words)
    scored: list[tuple[float, R]] = []
    vectored = [(r, v) for r in records if (v := vector_of(r)) is not None]
    if vectored:
        cosines = np.stack([v for _, v in vectored]) @ query_vector
        closest = int(np.argmax(cosines))
        for index, ((record, _), cosine) in enumerate(zip(vectored, cosines, strict=True)):
            score = 1.0 if exact is not None and exact(record) else float(cosine)
            if (
                score >= least_cosine
                or (best_from is not None and index == closest and score >= best_from)
                or (words_below_cosine and 0 < (matched := word_score(record)) and matched >= least_words)
            ):
                scored.append((score, record))
    with_vector = {id(r) for r, _ in vectored}
    for record in (r for r in records if id(r) not in with_vector):
        score = word_score(record)
        if score > 0 and score >= least_words:
            scored.append((min(score, 1.0), record))
    return best_first(scored)
