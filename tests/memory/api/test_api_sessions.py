from __future__ import annotations

import pytest
from django.utils import timezone

from memory.engine.types import calendar_day
from memory.models import Chunk, Item, Session

pytestmark = pytest.mark.django_db


def test_session_create_returns_the_session_document(alice_api):
    response = alice_api.post(
        "/api/v1/sessions", {"id": "chat-1", "title": "Planning", "x_budget": 100, "y_budget": 300}
    )

    assert response.status_code == 201
    body = response.json()
    assert {
        k: body[k] for k in ("id", "title", "workspace", "turns", "x_budget", "y_budget", "generation")
    } == {
        "id": "chat-1",
        "title": "Planning",
        "workspace": "",
        "turns": 0,
        "x_budget": 100,
        "y_budget": 300,
        "generation": 0,
    }
    assert body["tokens"] == {"x": 0, "y_raw": 0, "bullets": 0}


def test_session_create_generates_an_id_and_uses_default_budgets(alice_api):
    body = alice_api.post("/api/v1/sessions", {}).json()

    assert body["id"].startswith("s-") and len(body["id"]) == 18
    assert (body["x_budget"], body["y_budget"]) == (24_000, 80_000)


def test_session_create_refuses_a_taken_id(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "dup"})
    response = alice_api.post("/api/v1/sessions", {"id": "dup"})

    assert response.status_code == 409
    assert response.json()["code"] == "conflict"
    assert Session.objects.filter(sid="dup").count() == 1


def test_the_same_id_is_free_for_another_user(alice_api, bob_api):
    alice_api.post("/api/v1/sessions", {"id": "shared-name"})
    response = bob_api.post("/api/v1/sessions", {"id": "shared-name"})

    assert response.status_code == 201
    assert Session.objects.filter(sid="shared-name").count() == 2


def test_sessions_list_newest_first_and_filters(alice_api, bob_api):
    for sid in ("a-1", "b-2", "a-3"):
        alice_api.post("/api/v1/sessions", {"id": sid})
    bob_api.post("/api/v1/sessions", {"id": "bob-only"})

    everything = alice_api.get("/api/v1/sessions").json()
    filtered = alice_api.get("/api/v1/sessions?q=a-&limit=1").json()

    assert [s["id"] for s in everything["items"]] == ["a-3", "b-2", "a-1"]
    assert everything["count"] == 3
    assert ([s["id"] for s in filtered["items"]], filtered["count"]) == (["a-3"], 2)


@pytest.mark.parametrize("q", ["%E2%80%8B", "%20%20", "%EF%BB%BF%C2%A0"])
def test_sessions_list_refuses_a_q_of_only_blank_characters_as_the_lessons_list_does(alice_api, q):
    # A zero-width space searched for itself and answered no session, as if searched for words.
    alice_api.post("/api/v1/sessions", {"id": "a-1", "title": "Billing bug"})

    response = alice_api.get(f"/api/v1/sessions?q={q}")

    assert response.status_code == 422, response.content
    assert response.json() == {
        "detail": "q must not be empty: leave it out to list every session, newest first",
        "code": "invalid",
        "field": "q",
    }
    assert alice_api.get("/api/v1/sessions?q=").json()["count"] == 1  # empty, as left out: every session


def test_another_users_session_is_not_found(alice_api, bob_api):
    alice_api.post("/api/v1/sessions", {"id": "private"})

    for response in (
        bob_api.get("/api/v1/sessions/private"),
        bob_api.get("/api/v1/sessions/private/context"),
        bob_api.post("/api/v1/sessions/private/items", {"role": "user", "text": "hi"}),
        bob_api.delete("/api/v1/sessions/private"),
    ):
        assert response.status_code == 404
        assert response.json() == {"detail": "no session 'private'", "code": "not_found"}
    assert Item.objects.count() == 0
    assert Session.objects.filter(sid="private").exists()


def test_append_answers_hash_kind_position(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})

    first = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hello there"})
    second = alice_api.post("/api/v1/sessions/s/items", {"role": "assistant", "text": "hi"})

    assert first.status_code == 201
    assert first.json() == {
        "hash": "12998c017066eb0d2a70b94e6ed3192985855ce390f321bbdb832022888bd251",
        "kind": "history",
        "position": 0,
        "compaction": None,
    }
    assert second.json()["position"] == 1
    assert alice_api.get("/api/v1/sessions/s").json()["turns"] == 2


def test_context_reads_bullets_then_y_then_x(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 60})
    # The last turn stays in X: only an X overflow moves X (and then compacts Y).
    texts = [f"Message number {n} talks about topic {n * 7} at some length here." for n in range(12)]
    texts.append("Done.")
    for _n, text in enumerate(texts):
        alice_api.post("/api/v1/sessions/s/items", {"role": "assistant", "text": text})

    context = alice_api.get("/api/v1/sessions/s/context").json()

    assert context["kind"] == "history"
    assert context["bullets"], "12 turns through budgets 20/60 must have compacted"
    positions = [t["position"] for t in context["y_raw"] + context["x"]]
    assert positions == sorted(positions)
    assert (context["y_raw"] + context["x"])[-1]["text"] == texts[-1]
    assert (
        context["tokens"]["total"]
        == context["tokens"]["bullets"] + context["tokens"]["y_raw"] + context["tokens"]["x"]
    )
    assert context["text"].splitlines()[0] == f"- {context['bullets'][0]['text']}"
    assert context["text"].splitlines()[-1] == f"assistant ({calendar_day(timezone.now())}): {texts[-1]}"
    assert context["budgets"] == {"x": 20, "y": 60}


def test_user_turns_are_protected_by_default_and_survive_compaction(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 60})
    alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "Never deploy on Fridays."})
    for n in range(30):
        alice_api.post(
            "/api/v1/sessions/s/items",
            {"role": "assistant", "text": f"Status report {n}: the build is green and tests pass."},
        )

    context = alice_api.get("/api/v1/sessions/s/context").json()

    protected = [b for b in context["bullets"] if b["protected"]]
    assert [b["text"] for b in protected] == ["Never deploy on Fridays."]
    # The person's turn, verbatim, labelled with its role and the day it was said.
    assert [line for line in context["text"].splitlines() if line.startswith("user")] == [
        f"user ({calendar_day(timezone.now())}): Never deploy on Fridays."
    ]


def test_the_view_of_kind_context_is_refused_saying_where_tool_output_is_found(alice_api):
    # It answered 200 with an empty view whatever tool output the session held: context items never
    # enter the prompt view, so kind=context read as if there were none.
    alice_api.post("/api/v1/sessions", {"id": "s"})
    alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "Build the project."})
    tool = {"role": "tool", "text": "ERROR ERR_QUOTA_7731: build cache quota exceeded", "kind": "context"}
    alice_api.post("/api/v1/sessions/s/items", tool)

    response = alice_api.get("/api/v1/sessions/s/context?kind=context")

    assert response.status_code == 422, response.content
    assert response.json() == {
        "detail": "kind must be history: context items (tool output) are stored for recall and never enter "
        "the prompt view, so a view of them is always empty; find them with "
        'POST /api/v1/sessions/s/recall and "kind": "context" (or "all")',
        "code": "invalid",
        "field": "kind",
    }
    for path in ("/api/v1/sessions/s/context", "/api/v1/sessions/s/context?kind=history"):
        view = alice_api.get(path).json()
        assert (view["kind"], [t["text"] for t in view["x"]]) == ("history", ["Build the project."])
    found = alice_api.post("/api/v1/sessions/s/recall", {"query": "ERR_QUOTA_7731", "kind": "context"}).json()
    assert [t["text"] for p in found["results"]["context"] for t in p["turns"]] == [tool["text"]]
    assert alice_api.get("/api/v1/sessions/nope/context?kind=context").status_code == 404
    other = alice_api.get("/api/v1/sessions/s/context?kind=tools")
    assert (other.status_code, other.json()["field"]) == (422, "kind"), other.content
    assert other.json()["detail"] == "kind must be history, not 'tools'"


def test_the_api_document_offers_only_the_history_view():
    # It listed history and context, and a view of context is refused (above).
    from ottoweb.api import api

    operation = api.get_openapi_schema()["paths"]["/api/v1/sessions/{sid}/context"]["get"]
    kind = next(p for p in operation["parameters"] if p["name"] == "kind")
    assert (kind["schema"]["enum"], kind["schema"]["default"]) == (["history"], "history")


def test_delete_removes_everything_of_the_session(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s", "x_budget": 20, "y_budget": 60})
    for n in range(20):
        alice_api.post(
            "/api/v1/sessions/s/items", {"role": "assistant", "text": f"turn {n} with enough words to fill"}
        )

    response = alice_api.delete("/api/v1/sessions/s")

    assert response.status_code == 204
    assert (Session.objects.count(), Item.objects.count(), Chunk.objects.count()) == (0, 0, 0)
    assert alice_api.get("/api/v1/sessions/s").status_code == 404
