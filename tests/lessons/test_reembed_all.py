"""Issue 15, point 6: `reembed --all` re-embeds lessons and notes too; until then their answers say
`degraded` with the reason instead of claiming to be ranked by meaning."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from lessons.models import ErrorRecord
from memory.models import ScopedMemory

from .conftest import ERRORS, RELATED, recorded, resolved

pytestmark = pytest.mark.django_db

APP = {"appName": "crm", "domain": "acme.com"}


def test_reembed_all_gives_lessons_and_notes_the_current_models_vectors_and_ends_degraded(alice_api):
    record = recorded(alice_api.post(ERRORS, resolved()))
    note = alice_api.post(
        "/api/v1/memory/remember", {**APP, "content": "reports run nightly at 02:00"}
    ).json()
    # As after a model switch: their vectors come from a model the database no longer ranks by.
    ErrorRecord.objects.filter(pk=record["id"]).update(embedding_model="wordllama")
    ScopedMemory.objects.filter(pk=note["id"]).update(embedding_model="wordllama")
    related = {"tool": "bash", "error": "No space left on device while writing the build"}
    note_query = {**APP, "query": "when do reports run"}

    before_lesson = alice_api.post(RELATED, related).json()
    before_note = alice_api.post("/api/v1/memory/recall", note_query).json()
    out = StringIO()
    call_command("reembed", "--all", stdout=out)
    after_lesson = alice_api.post(RELATED, related).json()
    after_note = alice_api.post("/api/v1/memory/recall", note_query).json()

    assert before_lesson["degraded"].startswith("1 of the 1 records have no vector of ")
    assert before_note["degraded"] is True and before_note["note"].startswith("1 of the 1 notes")
    assert "lessons: 1 vectors" in out.getvalue() and "notes: 1 vectors" in out.getvalue()
    assert (after_lesson["match"], after_lesson["degraded"]) == ("semantic", None)
    assert [r["id"] for r in after_lesson["related_errors"]] == [record["id"]]
    assert "degraded" not in after_note and [i["id"] for i in after_note["items"]] == [note["id"]]
    # A second run has nothing left to do.
    again = StringIO()
    call_command("reembed", "--all", stdout=again)
    assert "lessons: 0 vectors" in again.getvalue() and "notes: 0 vectors" in again.getvalue()
