from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_audit_page_shows_the_users_trail_and_one_sessions(client, alice, alice_api, bob_api):
    alice_api.post("/api/v1/sessions", {"id": "a"})
    alice_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "hello"})
    alice_api.post("/api/v1/sessions", {"id": "other"})
    bob_api.post("/api/v1/sessions", {"id": "bobs-secret"})
    client.force_login(alice)

    everything = client.get("/audit/").content.decode()
    one = client.get("/audit/?session=a").content.decode()

    assert everything.count("<tr>") == 4  # header + three of Alice's calls
    assert "bobs-secret" not in everything
    assert "POST /api/v1/sessions/{sid}/items" in one and "id:other" not in one
    assert one.count("201 ok") == 2


def test_dashboard_actions_are_audited_too(client, alice):
    from accounts.models import AuditEntry
    from memory import services

    services.create_session(user=alice, sid="s")
    client.force_login(alice)
    client.post("/sessions/s/reset/", {"mode": "all", "confirm": "on"})

    entry = AuditEntry.objects.get()
    assert (entry.channel, entry.username, entry.session_sid, entry.token_prefix) == (
        "dashboard",
        "alice",
        "s",
        "",
    )


def test_audit_page_needs_login(client):
    response = client.get("/audit/")
    assert (response.status_code, response["Location"]) == (302, "/login/?next=/audit/")
