"""The small-store ranking lessons and notes share (memory/engine/keywords.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np

from memory.engine.keywords import best_first, rank, words

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Row:
    pk: int
    text: str
    vector: tuple[float, float] | None = None
    age_days: int = 0

    @property
    def updated_at(self) -> datetime:
        return T0 - timedelta(days=self.age_days)


def share(row: Row, query: str) -> float:
    wanted = words(query, frozenset())
    return len(wanted & words(row.text, frozenset())) / len(wanted)


def vec(row: Row) -> np.ndarray | None:
    return None if row.vector is None else np.array(row.vector, dtype=np.float32)


def test_words_are_lower_cased_keep_inner_punctuation_and_drop_single_letters_and_stopwords():
    found = words("Fix billing_v2.py: DON'T retry the Build a b c", frozenset({"the"}))
    assert found == {"fix", "billing_v2.py", "don't", "retry", "build"}


def test_ties_go_to_the_most_recently_updated_then_the_highest_id():
    old, new, newer_id = Row(1, "x", age_days=3), Row(2, "x", age_days=1), Row(3, "x", age_days=1)
    ordered = best_first([(0.5, old), (0.5, new), (0.9, old), (0.5, newer_id)])
    assert [(s, r.pk) for s, r in ordered] == [(0.9, 1), (0.5, 3), (0.5, 2), (0.5, 1)]


def test_without_a_query_vector_every_record_is_ranked_by_words_from_the_threshold():
    rows = [Row(1, "disk full"), Row(2, "disk quota exceeded"), Row(3, "network down")]
    ranked = rank(
        rows,
        query_vector=None,
        vector_of=vec,
        word_score=lambda r: share(r, "disk full error"),
        least_cosine=0.9,
        least_words=0.3,
    )
    assert [(round(s, 2), r.pk) for s, r in ranked] == [(0.67, 1), (0.33, 2)]


def test_a_vectored_record_scores_its_cosine_and_one_without_a_vector_its_capped_word_score():
    query = np.array([1.0, 0.0], dtype=np.float32)
    close = Row(1, "unrelated words", vector=(0.8, 0.6))
    far = Row(2, "disk full", vector=(0.0, 1.0))  # its words match, its meaning does not
    plain = Row(3, "disk full")  # no vector of the current model: ranked by words
    ranked = rank(
        [close, far, plain],
        query_vector=query,
        vector_of=vec,
        word_score=lambda r: 2.0 * share(r, "disk full"),
        least_cosine=0.5,
        least_words=0.5,
    )
    assert [(round(s, 2), r.pk) for s, r in ranked] == [(1.0, 3), (0.8, 1)]


def test_words_below_cosine_lets_a_weak_vectored_record_in_on_its_words_at_its_cosine():
    query = np.array([1.0, 0.0], dtype=np.float32)
    far = Row(2, "disk full", vector=(0.0, 1.0))
    weak = Row(1, "disk full", vector=(0.3, 0.954))  # its words as far's, its meaning nearer
    kwargs = dict(query_vector=query, vector_of=vec, word_score=lambda r: share(r, "disk full"))
    assert rank([far, weak], least_cosine=0.5, least_words=0.5, **kwargs) == []
    # Ranked by meaning, not both at the word score they share (then the higher id first).
    ranked = rank([far, weak], least_cosine=0.5, least_words=0.5, words_below_cosine=True, **kwargs)
    assert [(round(s, 2), r.pk) for s, r in ranked] == [(0.3, 1), (0.0, 2)]


def test_best_from_lets_only_the_closest_vectored_record_in_under_the_cosine_threshold():
    query = np.array([1.0, 0.0], dtype=np.float32)
    closest, next_one = Row(1, "a", vector=(0.3, 0.954)), Row(2, "b", vector=(0.25, 0.968))
    plain = Row(3, "c")  # no vector and none of the words: only words could let it in
    kwargs = dict(
        query_vector=query, vector_of=vec, word_score=lambda r: 0.0, least_cosine=0.4, least_words=0.0
    )
    assert rank([next_one, closest, plain], **kwargs) == []
    ranked = rank([next_one, closest, plain], best_from=0.2, **kwargs)
    assert [(round(s, 2), r.pk) for s, r in ranked] == [(0.3, 1)]
    assert rank([next_one, closest], best_from=0.35, **kwargs) == []


def test_an_exact_record_scores_one_whatever_its_cosine():
    query = np.array([1.0, 0.0], dtype=np.float32)
    keyed = Row(1, "active_scope", vector=(0.0, 1.0))
    ranked = rank(
        [keyed, Row(2, "other", vector=(0.6, 0.8))],
        query_vector=query,
        vector_of=vec,
        word_score=lambda r: 0.0,
        least_cosine=0.2,
        least_words=0.2,
        exact=lambda r: r.text == "active_scope",
    )
    assert [(round(s, 2), r.pk) for s, r in ranked] == [(1.0, 1), (0.6, 2)]
