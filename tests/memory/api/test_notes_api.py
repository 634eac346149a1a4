"""Issue 15, point 6: scoped notes are first-class — listed per scope (paged), read, deleted one by
one or a whole scope at once; only ever the caller's own."""

from __future__ import annotations

import pytest

from memory.models import ScopedMemory

pytestmark = pytest.mark.django_db

NOTES = "/api/v1/memory/notes"
APP = {"appName": "crm", "domain": "acme.com"}
CONVERSATION = {"conversationId": "c-7f3a"}


def remember(api, scope, content, key=None):
    body = {**scope, "content": content, **({"key": key} if key else {})}
    return api.post("/api/v1/memory/remember", body).json()["id"]


def query(scope: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in scope.items())


@pytest.fixture
def notes(alice_api):
    ids = {
        "app": [remember(alice_api, APP, f"app note {n}", key=f"k{n}") for n in range(5)],
        "conversation": [remember(alice_api, CONVERSATION, f"conversation note {n}") for n in range(3)],
    }
    return ids


def test_notes_list_pages_one_scope_newest_first(alice_api, notes):
    first = alice_api.get(f"{NOTES}?{query(APP)}&limit=2").json()
    second = alice_api.get(f"{NOTES}?{query(APP)}&limit=2&offset=2").json()
    everything = alice_api.get(NOTES).json()

    assert (first["count"], [i["id"] for i in first["items"]]) == (5, notes["app"][::-1][:2])
    assert [i["id"] for i in second["items"]] == notes["app"][::-1][2:4]
    assert first["items"][0] == {
        "id": notes["app"][4],
        "mode": "app",
        "projectKey": "app:crm@acme.com",
        "key": "k4",
        "content": "app note 4",
        "created_at": first["items"][0]["created_at"],
        "updated_at": first["items"][0]["updated_at"],
    }
    assert everything["count"] == 8


def test_scopes_list_counts_each_scope(alice_api, notes):
    scopes = alice_api.get("/api/v1/memory/scopes").json()["items"]

    assert sorted((s["projectKey"], s["mode"], s["notes"]) for s in scopes) == [
        ("app:crm@acme.com", "app", 5),
        ("conversation:c-7f3a", "conversation", 3),
    ]


def test_note_read_and_delete_one(alice_api, notes):
    target = notes["conversation"][1]

    read = alice_api.get(f"{NOTES}/{target}").json()
    deleted = alice_api.delete(f"{NOTES}/{target}")
    again = alice_api.get(f"{NOTES}/{target}")

    assert (read["content"], read["projectKey"]) == ("conversation note 1", "conversation:c-7f3a")
    assert deleted.status_code == 204
    assert (again.status_code, again.json()["code"]) == (404, "not_found")
    assert ScopedMemory.objects.count() == 7


def test_delete_scope_removes_that_scope_only(alice_api, notes):
    answer = alice_api.delete(f"{NOTES}?{query(APP)}").json()

    assert answer == {"mode": "app", "projectKey": "app:crm@acme.com", "deleted": 5}
    assert list(ScopedMemory.objects.values_list("project_key", flat=True).distinct()) == [
        "conversation:c-7f3a"
    ]


def test_delete_scope_needs_a_scope_and_deletes_nothing_without_one(alice_api, notes):
    response = alice_api.delete(NOTES)

    assert (response.status_code, response.json()["field"]) == (422, "appName")
    assert ScopedMemory.objects.count() == 8


def test_another_users_notes_are_not_found_listed_or_deleted(alice_api, bob_api, notes):
    target = notes["app"][0]

    assert bob_api.get(f"{NOTES}/{target}").status_code == 404
    assert bob_api.delete(f"{NOTES}/{target}").status_code == 404
    assert bob_api.get(f"{NOTES}?{query(APP)}").json() == {"items": [], "count": 0}
    assert bob_api.delete(f"{NOTES}?{query(APP)}").json()["deleted"] == 0
    assert bob_api.get("/api/v1/memory/scopes").json() == {"items": []}
    assert ScopedMemory.objects.count() == 8


@pytest.mark.parametrize(
    ("params", "field"),
    [("limit=0", "limit"), ("limit=101", "limit"), ("offset=-1", "offset"), ("appName=crm", "domain")],
)
def test_notes_list_refuses_bad_paging_and_half_scopes(alice_api, notes, params, field):
    response = alice_api.get(f"{NOTES}?{params}")

    assert (response.status_code, response.json()["field"]) == (422, field)


@pytest.mark.parametrize("note_id", ["0", "-1", str(2**63), str(2**80)])
def test_note_ids_out_of_range_are_not_found(alice_api, notes, note_id):
    read = alice_api.get(f"{NOTES}/{note_id}")
    deleted = alice_api.delete(f"{NOTES}/{note_id}")

    assert (read.status_code, deleted.status_code) == (404, 404)
    assert ScopedMemory.objects.count() == 8
