from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine

from lessons.models import ErrorRecord
from memory.engine.embeddings import MINILM_STAMP

from .conftest import DAY0, ERRORS, RELATED, iso, recorded, resolved

pytestmark = pytest.mark.django_db


def test_record_error_resolved_is_stored_with_a_90_day_ttl(alice, alice_api):
    with time_machine.travel(DAY0, tick=False):
        response = alice_api.post(ERRORS, resolved(context="make dist in CI"))

    assert response.status_code == 201, response.content
    row = ErrorRecord.objects.get()
    assert response.json() == {
        "id": row.pk,
        "tool": "bash",
        "error": "OSError: [Errno 28] No space left on device",
        "action": "rm -rf build/ && retry",
        "context": "make dist in CI",
        "created_at": iso(DAY0),
        "updated_at": iso(DAY0),
        "expires_at": iso(DAY0 + timedelta(days=90)),
        "hits": 0,
        # Which of the two answers this is (the other is {"stored": false, "reason"}), as MCP's
        # record_error says it.
        "stored": True,
    }
    assert (row.user, row.expires_at) == (alice, DAY0 + timedelta(days=90))
    # The "tool: error" vector is stored with the stamp of the model that made it (384 float32s).
    assert (row.embedding_model, len(bytes(row.embedding))) == (MINILM_STAMP, 384 * 4)


@pytest.mark.parametrize(
    "outcome, reason",
    [
        (
            "failed",
            "outcome is 'failed': only resolved errors are stored, so a fix that did not work is never suggested",
        ),
        (
            "abandoned",
            "outcome is 'abandoned': only resolved errors are stored, so an abandoned approach is not kept",
        ),
    ],
)
def test_record_error_failed_or_abandoned_stores_nothing(alice_api, outcome, reason):
    response = alice_api.post(ERRORS, {**resolved(), "outcome": outcome})

    assert (response.status_code, response.json()) == (200, {"stored": False, "reason": reason})
    assert ErrorRecord.objects.count() == 0
    assert alice_api.get(ERRORS).json()["count"] == 0


def test_record_error_failed_without_an_action_stores_nothing(alice_api):
    response = alice_api.post(ERRORS, {**resolved(), "action": "", "outcome": "failed"})

    assert (response.status_code, response.json()["stored"]) == (200, False)
    assert ErrorRecord.objects.count() == 0


def test_list_errors_returns_live_records_newest_first_with_count(alice_api):
    first = recorded(alice_api.post(ERRORS, resolved(error="first failure")))
    second = recorded(alice_api.post(ERRORS, resolved(tool="git", error="second failure")))

    body = alice_api.get(ERRORS).json()

    assert [item["id"] for item in body["items"]] == [second["id"], first["id"]]
    assert body["items"][0] == second
    assert (body["count"], body["match"], body["degraded"]) == (2, "semantic", None)


def test_list_errors_pages_with_limit_and_offset(alice_api):
    ids = [recorded(alice_api.post(ERRORS, resolved(error=f"failure {n}")))["id"] for n in range(3)]

    body = alice_api.get(f"{ERRORS}?limit=1&offset=1").json()

    assert ([i["id"] for i in body["items"]], body["count"]) == ([ids[1]], 3)


def test_list_errors_filters_by_tool_case_insensitively(alice_api):
    bash = recorded(alice_api.post(ERRORS, resolved(tool="Bash")))
    alice_api.post(ERRORS, resolved(tool="git"))

    body = alice_api.get(f"{ERRORS}?tool=bash").json()

    assert ([i["id"] for i in body["items"]], body["count"]) == ([bash["id"]], 1)


def test_list_errors_keyword_matches_error_action_and_context(alice_api):
    by_error = recorded(alice_api.post(ERRORS, resolved(error="Address already in use")))
    by_action = alice_api.post(
        ERRORS, resolved(error="port busy", action="kill the old address holder")
    ).json()
    by_context = alice_api.post(
        ERRORS, resolved(error="bind failed", context="ADDRESS reuse in tests")
    ).json()
    alice_api.post(ERRORS, resolved(error="No space left on device"))

    body = alice_api.get(f"{ERRORS}?q=address&match=keyword").json()

    # The error counts more than action or context; among equals the newest comes first.
    assert [i["id"] for i in body["items"]] == [by_error["id"], by_context["id"], by_action["id"]]
    assert (body["count"], body["match"]) == (3, "keyword")


def test_a_search_reads_only_the_newest_records_up_to_the_limit(alice_api, settings):
    oldest = recorded(alice_api.post(ERRORS, resolved(error="Address already in use")))
    alice_api.post(ERRORS, resolved(error="No space left on device"))
    newest = recorded(alice_api.post(ERRORS, resolved(error="address family not supported")))
    settings.OTTO_LESSONS_SEARCH_LIMIT = 2

    limited = alice_api.get(f"{ERRORS}?q=address&match=keyword").json()
    settings.OTTO_LESSONS_SEARCH_LIMIT = 3
    whole = alice_api.get(f"{ERRORS}?q=address&match=keyword").json()

    assert [i["id"] for i in limited["items"]] == [newest["id"]]
    assert [i["id"] for i in whole["items"]] == [newest["id"], oldest["id"]]


def test_list_errors_semantic_finds_a_reworded_query(alice_api):
    disk = recorded(alice_api.post(ERRORS, resolved(error="OSError: [Errno 28] No space left on device")))
    alice_api.post(ERRORS, resolved(error="fatal: not a git repository (or any of the parent directories)"))

    semantic = alice_api.get(f"{ERRORS}?tool=bash&q=disk+full&match=semantic").json()
    keyword = alice_api.get(f"{ERRORS}?tool=bash&q=disk+full&match=keyword").json()

    assert ([i["id"] for i in semantic["items"]], semantic["match"]) == ([disk["id"]], "semantic")
    assert (keyword["items"], keyword["count"]) == ([], 0)


def test_list_errors_does_not_count_as_a_hit(alice_api):
    with time_machine.travel(DAY0, tick=False):
        alice_api.post(ERRORS, resolved())
    with time_machine.travel(DAY0 + timedelta(days=10), tick=False):
        item = alice_api.get(f"{ERRORS}?q=space").json()["items"][0]

    assert (item["hits"], item["expires_at"]) == (0, iso(DAY0 + timedelta(days=90)))


def test_update_error_action_rewrites_the_action_and_keeps_the_ttl(alice_api):
    with time_machine.travel(DAY0, tick=False):
        created = recorded(alice_api.post(ERRORS, resolved()))
    with time_machine.travel(DAY0 + timedelta(days=10), tick=False):
        response = alice_api.call("PATCH", f"{ERRORS}/{created['id']}", {"action": "docker system prune -f"})

    assert response.status_code == 200, response.content
    assert response.json() == {
        **created,
        "action": "docker system prune -f",
        "updated_at": iso(DAY0 + timedelta(days=10)),
    }
    row = ErrorRecord.objects.get()
    assert (row.action, row.expires_at, row.hits) == (
        "docker system prune -f",
        DAY0 + timedelta(days=90),
        0,
    )


def test_delete_error_removes_the_record(alice_api):
    created = recorded(alice_api.post(ERRORS, resolved()))

    response = alice_api.delete(f"{ERRORS}/{created['id']}")

    assert (response.status_code, response.content) == (204, b"")
    assert ErrorRecord.objects.count() == 0
    assert alice_api.get(ERRORS).json() == {"items": [], "count": 0, "match": "semantic", "degraded": None}


@pytest.mark.parametrize("method", ["PATCH", "DELETE"])
@pytest.mark.parametrize("record_id", ["999", "99999999999999999999999", "0"])
def test_unknown_error_ids_answer_404(alice_api, method, record_id):
    response = alice_api.call(method, f"{ERRORS}/{record_id}", {"action": "x"} if method == "PATCH" else None)

    assert (response.status_code, response.json()) == (
        404,
        {"detail": f"no error record {record_id}", "code": "not_found"},
    )


def test_error_records_are_invisible_to_another_user(alice_api, bob_api):
    created = recorded(alice_api.post(ERRORS, resolved()))
    before = ErrorRecord.objects.values().get()

    listed = bob_api.get(ERRORS).json()
    searched = bob_api.get(f"{ERRORS}?q=space&match=keyword").json()
    related = bob_api.post(RELATED, {"tool": "bash", "error": created["error"]}).json()
    patched = bob_api.call("PATCH", f"{ERRORS}/{created['id']}", {"action": "rm -rf /"})
    deleted = bob_api.delete(f"{ERRORS}/{created['id']}")

    assert (listed["items"], listed["count"]) == ([], 0)
    assert (searched["items"], searched["count"]) == ([], 0)
    assert related["related_errors"] == []
    not_found = {"detail": f"no error record {created['id']}", "code": "not_found"}
    assert (patched.status_code, patched.json()) == (404, not_found)
    assert (deleted.status_code, deleted.json()) == (404, not_found)
    # Nothing of Alice's changed: not the action, not the hits, not the TTL.
    assert ErrorRecord.objects.values().get() == before
    assert alice_api.get(ERRORS).json()["items"] == [created]


def test_lessons_api_needs_a_token(alice_api):
    response = alice_api.get(ERRORS, token="otto_wrong")

    assert (response.status_code, response.json()["code"]) == (401, "unauthorized")


def assert_refused(response, detail: str, field: str | None = None) -> None:
    assert response.status_code == 422, response.content
    body = response.json()
    assert (body["detail"], body["code"]) == (detail, "invalid")
    if field is not None:
        assert body["field"] == field


@pytest.mark.parametrize(
    "body, detail, field",
    [
        ({**resolved(), "tool": "  "}, "tool must not be empty", "tool"),
        ({**resolved(), "error": ""}, "error must not be empty", "error"),
        ({**resolved(), "action": " \n"}, "action must not be empty", "action"),
        ({**resolved(), "tool": "\u200b"}, "tool must not be empty", "tool"),
        # A tool's name is a one-line label, as a turn's name and a session's title are.
        (
            {**resolved(), "tool": "bash\nrm"},
            "tool must not contain control characters, line breaks or direction overrides (it holds U+000A)",
            "tool",
        ),
        (
            {**resolved(), "tool": "bash\u202e"},
            "tool must not contain control characters, line breaks or direction overrides (it holds U+202E)",
            "tool",
        ),
        ({**resolved(), "tool": "t" * 201}, "tool is 201 characters; the limit is 200", "tool"),
        (
            {**resolved(), "error": "e" * 100_001},
            "error is 100,001 characters; the limit is 100,000",
            "error",
        ),
        (
            {**resolved(), "context": "c" * 100_001},
            "context is 100,001 characters; the limit is 100,000",
            "context",
        ),
        (
            {**resolved(), "outcome": "fixed"},
            "outcome: Input should be 'resolved', 'failed' or 'abandoned'",
            "outcome",
        ),
        ({k: v for k, v in resolved().items() if k != "outcome"}, "outcome: Field required", "outcome"),
        ({**resolved(), "tool": 7}, "tool: Input should be a valid string", "tool"),
        ({**resolved(), "user": "bob"}, "user: unknown field", "user"),
        ({**resolved(), "expires_at": "2099-01-01"}, "expires_at: unknown field", "expires_at"),
    ],
)
def test_record_error_refuses_bad_input_and_writes_nothing(alice_api, body, detail, field):
    assert_refused(alice_api.post(ERRORS, body), detail, field)
    assert ErrorRecord.objects.count() == 0


@pytest.mark.parametrize(
    "body, detail, field",
    [
        ({"action": ""}, "action must not be empty", "action"),
        ({"action": "a" * 100_001}, "action is 100,001 characters; the limit is 100,000", "action"),
        ({"action": "x", "expires_at": "2099-01-01"}, "expires_at: unknown field", "expires_at"),
        ({}, "action: Field required", "action"),
    ],
)
def test_update_error_action_refuses_bad_input_and_changes_nothing(alice_api, body, detail, field):
    created = recorded(alice_api.post(ERRORS, resolved()))

    assert_refused(alice_api.call("PATCH", f"{ERRORS}/{created['id']}", body), detail, field)
    assert alice_api.get(ERRORS).json()["items"] == [created]


@pytest.mark.parametrize(
    "body, detail, field",
    [
        (
            {"tool": "bash", "error": "x", "limit": 0},
            "limit: Input should be greater than or equal to 1",
            "limit",
        ),
        (
            {"tool": "bash", "error": "x", "limit": 4},
            "limit: Input should be less than or equal to 3",
            "limit",
        ),
        (
            {"tool": "bash", "error": "x", "limit": "three"},
            "limit: Input should be a valid integer",
            "limit",
        ),
        # Not 1: a boolean is no number, as in the MCP tools' arguments.
        ({"tool": "bash", "error": "x", "limit": True}, "limit: Input should be a valid integer", "limit"),
        ({"tool": "bash", "error": ""}, "error must not be empty", "error"),
        ({"tool": "", "error": "x"}, "tool must not be empty", "tool"),
        (
            {"tool": "ba\u2029sh", "error": "x"},
            "tool must not contain control characters, line breaks or direction overrides (it holds U+2029)",
            "tool",
        ),
        (
            {"tool": "bash", "error": "x", "match": "fuzzy"},
            "match: Input should be 'semantic' or 'keyword'",
            "match",
        ),
        ({"tool": "bash", "error": "x", "user_id": 1}, "user_id: unknown field", "user_id"),
    ],
)
def test_related_errors_refuse_bad_input_and_touch_nothing(alice_api, body, detail, field):
    with time_machine.travel(DAY0, tick=False):
        created = recorded(alice_api.post(ERRORS, resolved(error="x")))
        response = alice_api.post(RELATED, body)

    assert_refused(response, detail, field)
    assert ErrorRecord.objects.values_list("hits", "expires_at").get() == (0, DAY0 + timedelta(days=90))
    assert created["hits"] == 0


@pytest.mark.parametrize(
    "query, detail",
    [
        ("limit=0", "limit: Input should be greater than or equal to 1"),
        ("limit=501", "limit: Input should be less than or equal to 500"),
        ("offset=-1", "offset: Input should be greater than or equal to 0"),
        ("match=fuzzy", "match: Input should be 'semantic' or 'keyword'"),
    ],
)
def test_list_errors_refuses_bad_parameters(alice_api, query, detail):
    assert_refused(alice_api.get(f"{ERRORS}?{query}"), detail)


@pytest.mark.parametrize("q", ["%E2%80%8B", "%20%20", "%EF%BB%BF%C2%A0"])
def test_list_errors_refuses_a_blank_q_as_recall_refuses_a_blank_query(alice_api, q):
    # It answered every record, as if ranked by a query that searched for nothing.
    alice_api.post(ERRORS, resolved())

    assert_refused(
        alice_api.get(f"{ERRORS}?q={q}"),
        "q must not be empty: leave it out to list every live record, most recently changed first",
        "q",
    )
    assert alice_api.get(f"{ERRORS}?q=").json()["count"] == 1  # empty, as left out: every record
