"""ottoweb_client's audit() against a live production server: the caller's trail, newest first."""

from __future__ import annotations

import re

import pytest
from ottoweb_client import Ottoweb, OttowebError

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the client, not the database, is tested


def test_audit_lists_the_calls_newest_first_with_their_outcomes_narrowed_and_paged(server):
    client = Ottoweb(server.url, server.token)
    client.create_session("kept", title="Audited")
    with pytest.raises(OttowebError) as refused:
        client.pin("kept", 7)  # no turn at position 7
    client.create_session("other")
    client.context("kept")  # a read: not in the trail

    trail = client.audit()
    kept = client.audit("kept")
    second = client.audit(limit=1, offset=1)
    last = client.audit("kept", limit=1, offset=1)

    assert refused.value.code == "not_found"
    assert trail["count"] == 3
    assert [(e["action"], e["object"], e["session"], e["status"], e["outcome"]) for e in trail["items"]] == [
        ("POST /api/v1/sessions", "id:other", "other", 201, "ok"),
        ("POST /api/v1/sessions/{sid}/items/{position}/pin", "sid:kept", "kept", 404, "refused"),
        ("POST /api/v1/sessions", "id:kept", "kept", 201, "ok"),
    ]
    newest, pin, oldest = trail["items"]
    assert newest["id"] > pin["id"] > oldest["id"]
    assert newest["created_at"] >= pin["created_at"] >= oldest["created_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?Z", pin["created_at"])
    assert (pin["channel"], pin["method"], pin["path"]) == (
        "api",
        "POST",
        "/api/v1/sessions/kept/items/7/pin",
    )
    assert {e["token"] for e in trail["items"]} == {server.token[:12]}
    assert (kept["count"], [e["id"] for e in kept["items"]]) == (2, [pin["id"], oldest["id"]])
    assert (second["count"], second["items"]) == (3, [pin])
    assert (last["count"], last["items"]) == (2, [oldest])
