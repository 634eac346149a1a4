"""A pin made while a worker plans a compaction outside the lock is the one its commit keeps:
the plan may have seen the turn unpinned, or pinned, and the live bullets before the pin."""

from __future__ import annotations

import pytest
from django.db import transaction

from memory import services
from memory.models import Bullet, Item
from memory.services import NewItem

pytestmark = pytest.mark.django_db

ANSWER = "The staging password rotates every ninety days under ticket ZEBRA-4471."


def session_with_answer_at_0(alice, *, turns: int):
    session = services.create_session(user=alice, sid="race", x_budget=40, y_budget=300)
    services.append_items(session=session, items=[NewItem(role="assistant", text=ANSWER)])
    for n in range(turns):
        text = f"Status {n}: the build of module {n} is green and the tests pass."
        services.append_items(session=session, items=[NewItem(role="assistant", text=text)])
    return session


def live_pins(session):
    return [
        (b.text, b.protected, b.pinned)
        for b in Bullet.objects.filter(session=session, superseded=False)
        if b.hash_refs == [Item.objects.get(session=session, position=0).chunk.hash]
    ]


def commit(queue, plan):
    with transaction.atomic():
        return queue.commit(plan)


def test_a_turn_pinned_in_y_while_a_compaction_is_planned_stays_in_view(alice):
    session = session_with_answer_at_0(alice, turns=4)
    assert Item.objects.get(session=session, position=0).tier == "y"
    queue = services.queue_for(session)
    plan = queue.plan(force=True)  # the worker's plan, made outside the lock

    services.set_pinned(session=session, position=0)
    committed = commit(queue, plan)

    assert committed.committed is True
    assert Item.objects.get(session=session, position=0).tier == "a"
    assert live_pins(session) == [(ANSWER, True, True)]


def test_an_archived_turn_pinned_while_a_compaction_is_planned_keeps_its_bullet(alice):
    session = session_with_answer_at_0(alice, turns=30)
    assert Item.objects.get(session=session, position=0).tier == "a"
    queue = services.queue_for(session)
    plan = queue.plan(force=True)

    services.set_pinned(session=session, position=0)
    committed = commit(queue, plan)

    assert committed.committed is True
    assert live_pins(session) == [(ANSWER, True, True)]


def test_a_turn_unpinned_while_a_compaction_is_planned_is_committed_unpinned(alice):
    session = session_with_answer_at_0(alice, turns=30)
    services.set_pinned(session=session, position=0)
    queue = services.queue_for(session)
    plan = queue.plan(force=True)
    assert [b.pinned for b in plan.result.bullets if b.text == ANSWER] == [True]

    services.set_pinned(session=session, position=0, pinned=False)
    committed = commit(queue, plan)

    assert committed.committed is True
    assert live_pins(session) == [(ANSWER, True, False)]
    assert Item.objects.filter(session=session, pinned=True).count() == 0
