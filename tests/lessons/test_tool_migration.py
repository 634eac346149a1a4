"""Migration lessons 0002: an error record whose tool was stored before tools were held to one line
(a line break, a direction override) is cleaned, so a lookup of its tool finds it again."""

from __future__ import annotations

import importlib

import pytest

from lessons.models import ErrorRecord

from .conftest import ERRORS, RELATED, recorded, resolved

pytestmark = pytest.mark.django_db

migration = importlib.import_module("lessons.migrations.0002_error_tool_one_line")


def test_a_legacy_tool_is_cleaned_and_its_record_is_found_by_that_tool_again(alice_api):
    created = recorded(alice_api.post(ERRORS, resolved()))
    # Stored as a record written before the rule could have been.
    ErrorRecord.objects.filter(pk=created["id"]).update(tool="\u2066bash\r\n")
    before = ErrorRecord.objects.values("updated_at", "expires_at", "embedding").get(pk=created["id"])
    lookup = {"tool": "bash", "error": "No space left on device while writing the wheel"}
    missed = alice_api.post(RELATED, lookup).json()

    changed = migration.clean_error_tools(ErrorRecord)
    after = ErrorRecord.objects.values("updated_at", "expires_at", "embedding").get(pk=created["id"])
    found = alice_api.post(RELATED, lookup).json()

    assert missed["related_errors"] == []
    assert changed == 1
    # Only the name changed: the record's times and vector are the ones it had.
    assert {**after, "embedding": bytes(after["embedding"])} == {
        **before,
        "embedding": bytes(before["embedding"]),
    }
    assert [(r["id"], r["tool"]) for r in found["related_errors"]] == [(created["id"], "bash")]


def test_a_tool_of_nothing_but_refused_characters_gets_a_name_and_good_tools_stay(alice_api):
    kept = recorded(alice_api.post(ERRORS, resolved(tool=" make ")))
    emptied = recorded(alice_api.post(ERRORS, resolved(tool="pytest")))
    # A control character, a direction override and a line break (not NUL: PostgreSQL refuses it).
    ErrorRecord.objects.filter(pk=emptied["id"]).update(tool="\u202e\x07\n")
    kept_before = ErrorRecord.objects.values("tool", "updated_at").get(pk=kept["id"])

    changed = migration.clean_error_tools(ErrorRecord)

    assert changed == 1
    assert ErrorRecord.objects.get(pk=emptied["id"]).tool == migration.UNNAMED
    assert ErrorRecord.objects.values("tool", "updated_at").get(pk=kept["id"]) == kept_before
