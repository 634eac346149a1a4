"""Recall over one long session (600 turns, compacted ten times and more): built once for the
module (hundreds of turns embedded), read by each test."""

from __future__ import annotations

import pytest

from memory import services
from tests.conftest import built_once
from tests.memory.engine.conftest import synthetic_turns
from tests.memory.test_recall import FACT, fill, recall

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def long_session(module_owner, django_db_blocker):
    def build():
        session = services.create_session(user=module_owner.user, sid="long", x_budget=300, y_budget=900)
        turns = synthetic_turns(600, seed=11)
        turns.insert(3, ("user", FACT))
        fill(session, turns)
        return session

    return built_once(django_db_blocker, build)


@pytest.fixture
def api(module_owner):
    return module_owner.api


def test_fact_from_turn_3_of_600_comes_back_first_for_a_paraphrase(api, long_session):
    answer = recall(api, "long", query="Which city did Jenna relocate to for her studies?")

    assert api.get("/api/v1/sessions/long").json()["generation"] >= 10
    assert answer["degraded"] is None
    first = answer["results"]["history"][0]
    # The acceptance point: the fact is in the top passage, as a hit (its neighbours may be hits too).
    assert FACT in [t["text"] for t in first["turns"] if t["hit"]]
    assert answer["tokens"] <= 3000


def test_recall_passages_come_best_first_with_neighbours_in_order(api, long_session):
    answer = recall(api, "long", query="Jenna volcanology Reykjavik")

    scores = [p["score"] for p in answer["results"]["history"]]
    assert scores == sorted(scores, reverse=True)
    for passage in answer["results"]["history"]:
        positions = [t["position"] for t in passage["turns"]]
        assert positions == sorted(positions)
        assert any(t["hit"] for t in passage["turns"])


def test_procedural_policy_returns_one_passage_and_at_most_one_bullet(api, long_session):
    answer = recall(api, "long", query="Where does Jenna study?", policy="procedural")

    assert len(answer["results"]["history"]) == 1
    assert len(answer["bullets"]) <= 1
