"""Query expansion: the session's words near the question's, by static word vectors."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from memory.engine import bm25, expansion

# Hand-made unit vectors: "activities" is near "swimming" and "pottery", "cities" near "rome".
AXES = {
    "activities": [1.0, 0.0, 0.0],
    "swimming": [0.9, 0.3, 0.0],
    "pottery": [0.8, 0.0, 0.6],
    "cities": [0.0, 1.0, 0.0],
    "rome": [0.1, 0.95, 0.0],
}


class FakeVectors:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, words: Sequence[str]) -> np.ndarray:
        self.calls.append(list(words))
        rows = [AXES.get(w, [0.0, 0.0, 1.0 if w == "clay" else 0.0]) for w in words]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(words), 3)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)


DOCS = [
    (1, "I'm off to go swimming with the kids"),
    (2, "Took a short trip to Rome last week"),
    (3, "My pottery class was lovely"),
    *((10 + n, f"filler turn number {n} about nothing much") for n in range(40)),
]


def test_a_category_word_reaches_its_members_in_the_session():
    index = bm25.Index(DOCS)
    words = expansion.expand(
        ["activities"], index, FakeVectors(), asked={"activities", "what"}, threshold=0.5
    )
    assert set(words) == {"swimming", "pottery"}
    # The words find the turns BM25 on the question alone cannot.
    assert index.search(["activities"], 10) == []
    assert {pk for pk, _ in index.search(words, 10)} == {1, 3}


def test_threshold_per_term_asked_and_common_words_limit_the_expansion():
    index = bm25.Index(DOCS)
    vectors = FakeVectors()
    assert expansion.expand(["cities"], index, vectors, asked=set(), threshold=0.5) == ["rome"]
    assert expansion.expand(["cities"], index, vectors, asked=set(), threshold=0.999) == []
    assert expansion.expand(["activities"], index, vectors, asked=set(), threshold=0.5, per_term=1) == [
        "swimming"
    ]
    # A word of the question itself is not added again.
    assert "rome" not in expansion.expand(["cities"], index, vectors, asked={"rome"}, threshold=0.5)
    # "filler" is in 40 of 43 items: above max_df it says nothing.
    common = expansion.expand(["filler"], index, vectors, asked=set(), threshold=-1.0, per_term=50)
    assert "filler" not in common and "turn" not in common


def test_the_vocabulary_is_embedded_once_per_postings_part_and_a_new_tail_only_for_new_words():
    index = bm25.Index(DOCS)
    vectors = FakeVectors()
    expansion.expand(["activities"], index, vectors, asked=set())
    expansion.expand(["cities"], index, vectors, asked=set())
    vocabulary_calls = [c for c in vectors.calls if "swimming" in c]
    assert len(vocabulary_calls) == 1  # the main part's words, once for both questions
    grown = index.add([(99, "we fired clay in the kiln at pottery")])
    vectors.calls.clear()
    expansion.expand(["activities"], grown, vectors, asked=set(), threshold=0.5)
    embedded = [w for c in vectors.calls for w in c]
    assert "clay" in embedded and "kiln" in embedded
    assert "swimming" not in embedded and "pottery" not in embedded  # the main part's, already known


@pytest.mark.parametrize("terms", [[], ["42"], ["a1"]])
def test_no_word_to_expand_is_no_expansion(terms):
    vectors = FakeVectors()
    assert expansion.expand(terms, bm25.Index(DOCS), vectors, asked=set()) == []
    assert vectors.calls == []
    assert expansion.expand(["cities"], bm25.Index([]), vectors, asked=set()) == []


def test_a_large_vocabulary_keeps_its_commonest_words():
    index = bm25.Index(DOCS)
    vocabulary = expansion.vocabulary(index.main, FakeVectors(), limit=3)
    # "filler", "turn", "number", "about", "nothing", "much" are in 40 items each; the
    # turns' own words in one: these lose.
    assert len(vocabulary.words) == 3
    assert set(vocabulary.words) <= {"filler", "turn", "number", "about", "nothing", "much"}
    assert vocabulary.vectors.shape == (3, 3)


def test_the_vocabularies_held_stay_within_their_byte_budget_and_leave_with_their_part(monkeypatch):
    held = expansion._Vocabularies(budget=2 * 4 * 3 * 4)  # two parts' worth: 4 words × 3 floats each
    monkeypatch.setattr(expansion, "_vocabularies", held)
    parts = [bm25.Postings.of([(1, f"alpha{n} beta gamma delta epsilon")]) for n in range(3)]
    vectors = FakeVectors()
    for part in parts:
        expansion.vocabulary(part, vectors)
    # The oldest went to make room; the two newest are still held, within the budget.
    assert held.get(parts[0]) is None
    assert held.get(parts[1]) is not None and held.get(parts[2]) is not None
    assert held.bytes <= held.budget
    calls = len(vectors.calls)
    expansion.vocabulary(parts[2], vectors)
    assert len(vectors.calls) == calls  # held: not embedded again
    expansion.vocabulary(parts[0], vectors)
    assert len(vectors.calls) == calls + 1  # dropped: embedded again

    del parts[:], part
    assert held.held == {} and held.bytes == 0
