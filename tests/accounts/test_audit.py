from __future__ import annotations

import pytest

from accounts.models import AuditEntry

pytestmark = pytest.mark.django_db


def test_every_state_changing_api_call_is_audited_with_its_outcome(alice, alice_api, bob_api):
    alice_api.post("/api/v1/sessions", {"id": "a"})
    alice_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "hello"})
    alice_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "  "})
    bob_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "sneaky"})
    alice_api.get("/api/v1/sessions/a/context")
    alice_api.delete("/api/v1/sessions/a")

    rows = list(
        AuditEntry.objects.order_by("id").values_list(
            "username", "method", "action", "object_ref", "session_sid", "status", "outcome", "channel"
        )
    )
    assert rows == [
        ("alice", "POST", "POST /api/v1/sessions", "id:a", "a", 201, "ok", "api"),
        ("alice", "POST", "POST /api/v1/sessions/{sid}/items", "sid:a", "a", 201, "ok", "api"),
        ("alice", "POST", "POST /api/v1/sessions/{sid}/items", "sid:a", "a", 422, "refused", "api"),
        ("bob", "POST", "POST /api/v1/sessions/{sid}/items", "sid:a", "a", 404, "refused", "api"),
        ("alice", "DELETE", "DELETE /api/v1/sessions/{sid}", "sid:a", "a", 204, "ok", "api"),
    ]
    assert (
        AuditEntry.objects.filter(username="alice").values_list("token_prefix", flat=True).distinct().get()
        == alice_api.token[:12]
    )


def test_a_client_cannot_skip_or_forge_the_trail(alice, alice_api):
    alice_api.post("/api/v1/sessions", {"id": "b", "audit": False})
    alice_api.call("POST", "/api/v1/sessions", {"id": "c"}, token=alice_api.token)

    assert list(AuditEntry.objects.values_list("username", "status")) == [("alice", 422), ("alice", 201)]


def test_an_anonymous_refused_request_leaves_no_entry(client):
    client.post("/api/v1/sessions", "{}", content_type="application/json")

    assert AuditEntry.objects.count() == 0


def test_the_audit_api_lists_only_the_callers_entries_newest_first(alice_api, bob_api):
    alice_api.post("/api/v1/sessions", {"id": "a"})
    alice_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "hello"})
    bob_api.post("/api/v1/sessions", {"id": "b"})

    mine = alice_api.get("/api/v1/audit").json()
    session = alice_api.get("/api/v1/audit?session=a&limit=1").json()

    assert [e["action"] for e in mine["items"]] == [
        "POST /api/v1/sessions/{sid}/items",
        "POST /api/v1/sessions",
    ]
    assert mine["count"] == 2
    assert [e["session"] for e in session["items"]] == ["a"] and session["count"] == 2
    assert set(mine["items"][0]) == {
        "id",
        "created_at",
        "channel",
        "method",
        "path",
        "action",
        "object",
        "session",
        "status",
        "outcome",
        "token",
    }
