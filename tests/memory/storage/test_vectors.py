"""storage/vectors.py: rankings that take in vectors computed for one search and never stored."""

from __future__ import annotations

import numpy as np

from memory.storage.vectors import UnstoredVectors, with_unstored


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


QUERIES = np.stack([_unit(1, 0, 0), _unit(0, 1, 0)])
UNSTORED = UnstoredVectors(
    item_ids=np.array([7, 8], dtype=np.int64),
    vectors=np.stack([_unit(1, 0.1, 0), _unit(0, 0, 1)]),
)


def test_unstored_vectors_are_ranked_among_the_stored_by_cosine_for_each_question():
    stored = [[(1, 0.9), (2, 0.5)], [(3, 0.8)]]

    merged = with_unstored(stored, UNSTORED, QUERIES, limit=10)

    assert [pk for pk, _ in merged[0]] == [7, 1, 2, 8]
    assert merged[0][0][1] == np.float32(UNSTORED.vectors[0] @ QUERIES[0])
    assert [pk for pk, _ in merged[1]] == [3, 7, 8]


def test_the_limit_holds_and_only_ids_inside_the_bounds_are_added():
    stored = [[(1, 0.9), (2, 0.5)], []]

    merged = with_unstored(stored, UNSTORED, QUERIES, limit=2, among=np.array([1, 2, 8], dtype=np.int64))

    assert merged[0] == [(1, 0.9), (2, 0.5)]
    assert [pk for pk, _ in merged[1]] == [8]


def test_an_item_stored_meanwhile_keeps_its_stored_score_once():
    stored = [[(7, 0.2)], [(7, 0.2)]]

    merged = with_unstored(stored, UNSTORED, QUERIES, limit=10)

    assert [pk for pk, _ in merged[0]].count(7) == 1
    assert (7, 0.2) in merged[0]
