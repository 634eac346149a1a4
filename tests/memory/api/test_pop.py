"""Taking the newest turn back (`POST /sessions/{id}/items/pop`, what a framework's `pop_item`
calls): the turn goes as if it had never been appended — its text, index row and position — the
session's export imports back, a raw turn in Y goes as one in X does (a compaction planned on it
meanwhile plans again), and a turn compacted into the summary stays, with nothing written."""

from __future__ import annotations

import json

import pytest

from memory.models import Chunk, Item, Session
from tests.reliability.snapshot import all_rows

pytestmark = pytest.mark.django_db


def new_session(api, sid="pop", **settings):
    assert api.post("/api/v1/sessions", {"id": sid, **settings}).status_code == 201
    return sid


def append(api, sid, *texts, role="assistant"):
    items = [{"role": role, "text": t} for t in texts]
    response = api.post(f"/api/v1/sessions/{sid}/items/batch", {"items": items})
    assert response.status_code == 201, response.content
    return [i["position"] for i in response.json()["items"]]


def pop(api, sid):
    return api.post(f"/api/v1/sessions/{sid}/items/pop", {})


def keyword_hits(api, sid, query):
    response = api.post(f"/api/v1/sessions/{sid}/recall", {"query": query, "match": "keyword"})
    assert response.status_code == 200, response.content
    return [t["text"] for p in response.json()["results"]["history"] for t in p["turns"]]


def test_pop_answers_the_newest_turn_and_the_session_reads_as_if_it_was_never_sent(alice_api):
    sid = new_session(alice_api)
    append(alice_api, sid, "The invoice total is 418 euros.", "Shipping goes to Porto.")
    append(alice_api, sid, "Actually the zebra protocol was cancelled.", role="user")

    response = pop(alice_api, sid)

    assert response.status_code == 200, response.content
    popped = response.json()["item"]
    assert (popped["text"], popped["role"], popped["position"]) == (
        "Actually the zebra protocol was cancelled.",
        "user",
        2,
    )
    view = alice_api.get(f"/api/v1/sessions/{sid}/context").json()
    assert [t["text"] for t in view["x"]] == ["The invoice total is 418 euros.", "Shipping goes to Porto."]
    assert "zebra" not in view["text"]
    assert keyword_hits(alice_api, sid, "zebra protocol") == []
    assert not Chunk.objects.filter(text__contains="zebra").exists()
    assert Session.objects.get(sid=sid).turns == 2
    # The next turn takes the popped one's position: no gap.
    assert append(alice_api, sid, "Shipping is insured.") == [2]


def test_after_a_pop_the_export_imports_back_whole(alice_api):
    sid = new_session(alice_api, x_budget=60, y_budget=200)
    for n in range(20):
        append(alice_api, sid, f"Step {n}: module {n} builds and its tests pass.")
    append(alice_api, sid, "A turn that will be taken back.")
    assert pop(alice_api, sid).json()["item"]["text"] == "A turn that will be taken back."
    exported = alice_api.get(f"/api/v1/sessions/{sid}/export").json()

    response = alice_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(exported))
    again = alice_api.get("/api/v1/sessions/copy/export").json()

    assert response.status_code == 201, response.content
    for part in ("pending", "archive", "bullets"):
        assert again[part] == exported[part], part
    assert append(alice_api, "copy", "Next.") == append(alice_api, sid, "Next.")


def test_pop_of_an_empty_session_answers_no_item(alice_api):
    sid = new_session(alice_api)

    response = pop(alice_api, sid)

    assert (response.status_code, response.json()) == (200, {"item": None})


def test_a_newest_turn_compacted_into_the_summary_stays_and_nothing_is_written(alice_api):
    sid = new_session(alice_api, x_budget=60, y_budget=200)
    append(alice_api, sid, *[f"Step {n}: module {n} builds." for n in range(10)])
    assert alice_api.post(f"/api/v1/sessions/{sid}/memory", {"action": "compact"}).status_code == 200
    assert not Item.objects.filter(session__sid=sid, tier="x").exists()
    before = all_rows()

    response = pop(alice_api, sid)

    assert response.status_code == 409, response.content
    assert response.json()["code"] == "conflict"
    assert "only a raw turn can be popped" in response.json()["detail"]
    assert all_rows() == before


def test_another_users_session_cannot_be_popped(alice_api, bob_api):
    sid = new_session(alice_api)
    append(alice_api, sid, "Alice's own turn.")

    response = pop(bob_api, sid)

    assert response.status_code == 404
    assert Item.objects.filter(session__sid=sid).count() == 1


def test_a_newest_turn_in_y_raw_is_popped_and_a_compaction_planned_on_it_plans_again(alice_api):
    from memory.services import queue_for
    from memory.storage import DjangoTierStore

    sid = new_session(alice_api, x_budget=40, y_budget=400)
    session = Session.objects.get(sid=sid)
    for n in range(10):  # until X overflows and moves to Y whole, the newest turn with it
        append(alice_api, sid, f"Step {n}: module {n} builds and its tests pass.")
        newest = Item.objects.filter(session=session).order_by("-position").first()
        if newest.tier == "y":
            break
    assert newest.tier == "y"
    queue = queue_for(session)
    plan = queue.plan(force=True)  # a worker's plan, made outside the lock, on Y as it is now
    assert newest.position in plan.positions

    popped = pop(alice_api, sid).json()["item"]
    compacted = queue_for(session).commit(plan)

    assert popped["position"] == newest.position
    assert not compacted.committed  # it would have cited a turn nothing holds
    assert not Item.objects.filter(session=session, tier="a").exists()
    again = queue_for(session).compact(force=True)
    assert again.committed
    cited = {h for b in DjangoTierStore(session).live_bullets("history") for h in b.hash_refs}
    held = set(Item.objects.filter(session=session).values_list("chunk__hash", flat=True))
    assert cited <= held
