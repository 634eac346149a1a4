"""Migration 0015: a session whose title or workspace was stored before they were held to one line
(a line break, a direction override) is cleaned, so its export imports back."""

from __future__ import annotations

import importlib

import pytest

from memory.models import Session

pytestmark = pytest.mark.django_db

clean_session_labels = importlib.import_module(
    "memory.migrations.0015_session_labels_one_line"
).clean_session_labels


def test_a_legacy_title_and_workspace_are_cleaned_and_their_export_imports_back(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "legacy"})
    alice_api.post("/api/v1/sessions/legacy/items", {"role": "user", "text": "Deploy on Tuesdays."})
    # Stored as a session created before the rule could have been.
    Session.objects.filter(sid="legacy").update(
        title="Q3\r\n\tplan\u202e", workspace="\u2066repo\nmain\u2069 "
    )
    before = alice_api.post(
        "/api/v1/sessions/import?id=before", alice_api.get("/api/v1/sessions/legacy/export").json()
    )

    changed = clean_session_labels(Session)
    exported = alice_api.get("/api/v1/sessions/legacy/export").json()
    imported = alice_api.post("/api/v1/sessions/import?id=copy", exported)

    assert (before.status_code, before.json()["field"]) == (422, "session.title")
    assert changed == 1
    assert (exported["session"]["title"], exported["session"]["workspace"]) == ("Q3 plan", "repo main")
    assert imported.status_code == 201
    assert (imported.json()["title"], imported.json()["workspace"]) == ("Q3 plan", "repo main")
    assert alice_api.get("/api/v1/sessions/copy/export").json()["pending"] == exported["pending"]


def test_a_session_whose_labels_pass_is_left_as_it_is(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "fine", "title": " Q3 plan ", "workspace": "ops"})
    before = Session.objects.values("title", "workspace", "updated_at").get(sid="fine")

    changed = clean_session_labels(Session)

    assert changed == 0
    assert Session.objects.values("title", "workspace", "updated_at").get(sid="fine") == before
