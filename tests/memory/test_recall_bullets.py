"""The bullets a recall returns beside its passages: the live history bullets citing its hits, by
the best hit each cites, then by first position, as many as the policy and the budget take; ranked
from the citation index, with only the chosen bullets read whole and checked against full hashes."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services
from memory.evaluation.synthetic import chatter
from memory.models import Bullet
from memory.recall import POLICIES, recall
from memory.services import NewItem
from tests.conftest import built_once

pytestmark = pytest.mark.django_db

QUESTIONS = [
    "Which file had the flaky check?",
    "What did Omar say about the mobile sync API?",
    "Why was the payments webhook slow?",
    "the search indexer rollback",
    "Is Lucía happy with the change?",
]


@pytest.fixture(scope="module")
def compacted(module_owner, django_db_blocker):
    """Built once for the module; what a test changes rolls back with it."""

    def build():
        session = services.create_session(user=module_owner.user, sid="bullets", x_budget=300, y_budget=2000)
        turns = chatter(200, seed=6)  # a person's turns stay live as protected bullets
        for first in range(0, len(turns), 50):
            services.append_items(
                session=session, items=[NewItem(role=r, text=t) for r, t in turns[first : first + 50]]
            )
        services.embed_items(session=session, kind="history")
        assert Bullet.objects.filter(session=session, kind="history", superseded=False).count() > 10
        return session

    return built_once(django_db_blocker, build)


def expected_bullets(session, answer, policy):
    """Every live bullet read whole, ranked as the contract says."""
    order = [t["hash"] for p in answer["results"]["history"] for t in p["turns"] if t["hit"]]
    rank = {h: i for i, h in reversed(list(enumerate(order)))}
    tokens = dict(Bullet.objects.filter(session=session).values_list("pk", "tokens"))
    room = answer["_budget"] - (answer["tokens"] - sum(tokens[b["id"]] for b in answer["bullets"]))
    scored = []
    for b in Bullet.objects.filter(session=session, kind="history", superseded=False):
        best = min((rank[h] for h in b.hash_refs if h in rank), default=None)
        if best is not None:
            scored.append((best, b.first_position, b.pk))
    chosen, spent = [], 0
    for *_, pk in sorted(scored):
        if len(chosen) >= POLICIES[policy].max_bullets:
            break
        if tokens[pk] <= room - spent:
            chosen.append(pk)
            spent += tokens[pk]
    return chosen


def test_the_bullets_are_the_live_ones_citing_the_best_hits_within_the_budget(compacted):
    returned = 0
    for policy in ("default", "procedural"):
        for question in QUESTIONS:
            for budget in (3000, 400, 120):
                answer = recall(compacted, query=question, kind="history", policy=policy, max_tokens=budget)
                answer["_budget"] = budget
                assert [b["id"] for b in answer["bullets"]] == expected_bullets(compacted, answer, policy)
                assert answer["tokens"] <= budget
                returned += len(answer["bullets"])
    assert returned > 5


def test_a_bullet_matching_a_hit_in_64_bits_only_is_not_returned(compacted):
    asked = {"query": QUESTIONS[0], "kind": "history", "policy": "procedural"}
    answer = recall(compacted, **asked)
    hit = next(t for p in answer["results"]["history"] for t in p["turns"] if t["hit"])
    near = hit["hash"][:16] + ("0" if hit["hash"][16] != "0" else "1") + hit["hash"][17:]
    impostor = Bullet.objects.create(
        session=compacted,
        kind="history",
        generation=99,
        text="- cites a hash that shares the best hit's first 64 bits",
        hash_refs=[near],
        tokens=1,
        first_position=0,
    )
    Bullet.objects.filter(session=compacted).exclude(pk=impostor.pk).update(first_position=1)

    with CaptureQueriesContext(connection) as reads:
        again = recall(compacted, **asked)
    assert again["results"] == answer["results"]
    assert again["bullets"] and impostor.pk not in [b["id"] for b in again["bullets"]]
    whole = [
        q["sql"]
        for q in reads.captured_queries
        if "FROM memory_bullet" in q["sql"] and "hash_refs" in q["sql"]
    ]
    assert len(whole) == 2, "the impostor was read, found out, and the next bullet read instead"


def test_only_the_chosen_bullets_are_read_whole(compacted):
    with CaptureQueriesContext(connection) as reads:
        answer = recall(compacted, query=QUESTIONS[1], kind="history", policy="procedural")
    whole = [
        q["sql"]
        for q in reads.captured_queries
        if "FROM memory_bullet" in q["sql"] and "hash_refs" in q["sql"]
    ]
    assert answer["bullets"] and len(whole) == 1
    ids = re.search(r"id IN \(([^)]*)\)", whole[0]).group(1).split(",")
    assert len(ids) == len(answer["bullets"]) == POLICIES["procedural"].max_bullets
