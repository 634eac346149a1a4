"""The turns recall's assembly reads come from a per-process cache (memory/storage/turn_cache.py):
they are the database's, never stale after appends, a reset or a pin, and a turn too long to
hold, a bounded recall or a session over the budget is read where it lives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services
from memory.models import Item
from memory.recall import recall
from memory.services import NewItem
from memory.storage import NO_BOUNDS, Bounds, turn_cache, turn_rows, window_turns
from memory.storage.caches import table_state
from memory.storage.turn_cache import HELD_TOKENS
from tests.memory.engine.conftest import synthetic_turns

pytestmark = pytest.mark.django_db

START = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
LOG = "ERROR worker 7 lost its lease\n" * 400  # a pasted log: too long to hold


@pytest.fixture
def session(alice):
    session = services.create_session(user=alice, sid="turns")
    items = [
        NewItem(role=role, text=text, occurred_at=START + timedelta(minutes=n))
        for n, (role, text) in enumerate(synthetic_turns(80, seed=3))
    ]
    items.insert(40, NewItem(role="tool", text=LOG, name="ci", occurred_at=START + timedelta(minutes=40)))
    services.append_items(session=session, items=items)
    return session


def positions(session):
    return list(Item.objects.filter(session=session, kind="history").values_list("position", flat=True))


def from_cache(session, wanted, bounds=NO_BOUNDS):
    state = table_state("memory_item", session.pk, "history")
    return sorted(window_turns(session.pk, "history", wanted, bounds, state=state), key=lambda t: t.position)


def from_rows(session, wanted, bounds=NO_BOUNDS):
    return sorted(turn_rows(session.pk, "history", wanted, bounds), key=lambda t: t.position)


def test_every_turn_is_the_database_s_and_a_long_one_is_read_not_held(session):
    every = positions(session)
    assert from_cache(session, every) == from_rows(session, every)
    held = turn_cache.get(session.pk, "history")
    log = Item.objects.get(session=session, kind="history", tokens__gt=HELD_TOKENS)
    assert held is not None and held.turns[log.position][1] is None  # not held...
    assert [t.text for t in from_cache(session, [log.position])] == [LOG]  # ...and still read


def test_turns_appended_after_a_read_are_read_and_a_reset_leaves_no_old_text(session):
    from_cache(session, positions(session))
    services.append_items(session=session, items=[NewItem(role="user", text="The gate code is 4417.")])
    every = positions(session)
    assert from_cache(session, every)[-1].text == "The gate code is 4417."
    assert from_cache(session, every) == from_rows(session, every)

    services.reset_session(session=session, mode="all")
    services.append_items(session=session, items=[NewItem(role="user", text="A fresh start.")])
    again = positions(session)
    assert [t.text for t in from_cache(session, again)] == ["A fresh start."]
    assert from_cache(session, again) == from_rows(session, again)


def test_a_bounded_read_and_a_session_over_the_budget_read_the_database(session, monkeypatch):
    every = positions(session)
    from_cache(session, every)  # held
    bounds = Bounds(since=START + timedelta(minutes=10), until=START + timedelta(minutes=20))
    inside = from_cache(session, every, bounds)
    assert len(inside) == 10 and inside == from_rows(session, every, bounds)

    turn_cache.clear()
    monkeypatch.setattr(turn_cache, "budget", 1000)
    with CaptureQueriesContext(connection) as reads:
        assert from_cache(session, every) == from_rows(session, every)
    assert turn_cache.get(session.pk, "history") is None
    assert any(
        "JOIN memory_chunk" in q["sql"] and "i.position IN" in q["sql"] for q in reads.captured_queries
    )


def test_a_recall_after_a_pin_says_the_turn_is_pinned(session):
    question = "the spare key behind the blue watering can"
    services.append_items(
        session=session,
        items=[NewItem(role="user", text="The spare key hangs behind the blue watering can.")],
    )
    services.embed_items(session=session, kind="history")

    def key_turn():
        answer = recall(session, query=question, kind="history")
        return next(
            t for p in answer["results"]["history"] for t in p["turns"] if "watering can" in t["text"]
        )

    before = key_turn()  # the turns are held now
    assert before["pinned"] is False
    services.set_pinned(session=session, position=before["position"])
    assert key_turn()["pinned"] is True
    services.set_pinned(session=session, position=before["position"], pinned=False)
    assert key_turn()["pinned"] is False
