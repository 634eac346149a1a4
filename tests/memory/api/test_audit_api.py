"""GET /audit: its answer's bytes, and the OpenAPI document that describes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from accounts.models import AuditEntry
from ottoweb.api import api

pytestmark = pytest.mark.django_db


def test_the_audit_answer_keeps_its_fields_order_and_time_format(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "a"})
    alice_api.post("/api/v1/sessions/a/items", {"role": "user", "text": "  "})
    first, second = AuditEntry.objects.order_by("id")
    # A whole second is written without a fraction, any other instant to the microsecond, both `Z`.
    AuditEntry.objects.filter(pk=first.pk).update(created_at=datetime(2024, 3, 1, 9, 30, tzinfo=UTC))
    AuditEntry.objects.filter(pk=second.pk).update(
        created_at=datetime(2024, 3, 1, 9, 30, 0, 250000, tzinfo=UTC)
    )
    token = alice_api.token[:12]

    answer = alice_api.get("/api/v1/audit").content

    assert (
        answer
        == json.dumps(
            {
                "items": [
                    {
                        "id": second.pk,
                        "created_at": "2024-03-01T09:30:00.250000Z",
                        "channel": "api",
                        "method": "POST",
                        "path": "/api/v1/sessions/a/items",
                        "action": "POST /api/v1/sessions/{sid}/items",
                        "object": "sid:a",
                        "session": "a",
                        "status": 422,
                        "outcome": "refused",
                        "token": token,
                    },
                    {
                        "id": first.pk,
                        "created_at": "2024-03-01T09:30:00Z",
                        "channel": "api",
                        "method": "POST",
                        "path": "/api/v1/sessions",
                        "action": "POST /api/v1/sessions",
                        "object": "id:a",
                        "session": "a",
                        "status": 201,
                        "outcome": "ok",
                        "token": token,
                    },
                ],
                "count": 2,
            }
        ).encode()
    )


def test_an_entry_with_no_object_session_or_token_answers_empty_strings(alice, alice_api):
    # A dashboard action: no token, nothing named in its route.
    AuditEntry.objects.create(
        user=alice,
        channel="dashboard",
        method="POST",
        path="/tokens/",
        action="tokens",
        status=302,
        outcome="ok",
    )

    (entry,) = alice_api.get("/api/v1/audit").json()["items"]

    assert (entry["channel"], entry["object"], entry["session"], entry["token"]) == ("dashboard", "", "", "")


def test_the_openapi_document_names_every_field_of_the_audit_answer(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "a"})
    (served,) = alice_api.get("/api/v1/audit").json()["items"]
    schema = api.get_openapi_schema()
    answer = schema["paths"]["/api/v1/audit"]["get"]["responses"][200]["content"]["application/json"][
        "schema"
    ]
    components = schema["components"]["schemas"]
    page = components["AuditListOut"]
    entry = components["AuditEntryOut"]

    assert answer == {"$ref": "#/components/schemas/AuditListOut"}
    assert page["properties"]["items"]["items"] == {"$ref": "#/components/schemas/AuditEntryOut"}
    assert sorted(page["required"]) == ["count", "items"]
    # The fields the answer holds, in its order, every one required (none is ever left out).
    assert list(entry["properties"]) == list(served)
    assert sorted(entry["required"]) == sorted(served)
    assert entry["properties"]["created_at"]["format"] == "date-time"
    assert entry["properties"]["outcome"]["enum"] == ["ok", "refused", "error"]
    assert entry["properties"]["channel"]["enum"] == ["api", "dashboard", "mcp"]
    for name in ("id", "status"):
        assert entry["properties"][name]["type"] == "integer", name
    for name in ("method", "path", "action", "object", "session", "token"):
        assert entry["properties"][name]["type"] == "string", name
