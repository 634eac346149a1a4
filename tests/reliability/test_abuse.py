"""A clumsy or hostile client: every input gets a JSON answer, and refusals write nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import AuditEntry
from memory.models import Item, Job, Session

DEEP = '{"a": ' * 5000 + "1" + "}" * 5000
DEEP_LIST = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/sessions",
        "/api/v1/sessions/s/items",
        "/api/v1/sessions/s/items/batch",
        "/api/v1/sessions/s/recall",
        "/api/v1/runs/fit",
        "/api/v1/lessons/errors",
        "/api/v1/memory/remember",
    ],
)
@pytest.mark.parametrize("body", [DEEP, DEEP_LIST], ids=["objects", "arrays"])
def test_a_body_nested_5000_deep_is_a_422_naming_the_depth(alice_api, path, body):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    before = (Session.objects.count(), Item.objects.count())

    response = alice_api.post(path, raw=body)

    assert response.status_code == 422
    assert response.json() == {
        "detail": "the JSON nests deeper than 64 levels of arrays and objects (the limit)",
        "code": "invalid",
        "field": "body",
    }
    assert (Session.objects.count(), Item.objects.count()) == before


def test_an_import_nested_5000_deep_is_a_422_naming_the_depth(alice_api):
    response = alice_api.post("/api/v1/sessions/import?id=deep", raw=DEEP)

    assert response.status_code == 422
    assert response.json() == {
        "detail": "the JSON nests deeper than 64 levels of arrays and objects (the limit)",
        "code": "invalid",
        "field": "$",
    }
    assert Session.objects.count() == 0


def test_a_body_nested_within_the_limit_is_accepted(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    meta_like = {"tool": "x", "content": "ok"}
    response = alice_api.post(
        "/api/v1/runs/fit",
        {
            "model": "openai:gpt-4o",
            "messages": [{"role": "user", "content": "hi", "extra": [[[[meta_like]]]]}],
        },
    )

    assert response.status_code == 200


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_non_get_to_an_unknown_api_path_is_the_json_404(method):
    client = Client(enforce_csrf_checks=True)

    response = getattr(client, method)("/api/v2/nothing", data="{}", content_type="application/json")

    assert response.status_code == 404
    assert response.json() == {"detail": "no such API path", "code": "not_found"}


@pytest.mark.parametrize("sid", [".", "..", "import"])
def test_a_session_id_a_url_cannot_address_is_refused_at_creation(alice_api, sid):
    response = alice_api.post("/api/v1/sessions", {"id": sid})

    assert response.status_code == 422
    assert response.json() == {
        "detail": f"session id {sid!r} cannot be addressed in a URL; choose another",
        "code": "invalid",
        "field": "id",
    }
    assert Session.objects.count() == 0


def test_an_import_under_an_unaddressable_id_is_refused(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    document = alice_api.get("/api/v1/sessions/s/export").json()

    response = alice_api.post("/api/v1/sessions/import?id=..", document)

    assert response.status_code == 422
    assert response.json()["field"] == "id"
    assert list(Session.objects.values_list("sid", flat=True)) == ["s"]


def test_300_anonymous_requests_write_no_audit_row(db):
    from accounts import audit

    audit.anonymous_refusals.clear()
    client = Client()
    paths = ["/api/v1/nothing", "/nothing/at/all", "/login/link/abc/def/", "/api/v1/sessions"]

    statuses = {
        client.post(paths[n % len(paths)], data="{}", content_type="application/json").status_code
        for n in range(300)
    }

    assert statuses == {401, 404, 410}
    assert AuditEntry.objects.count() == 0
    assert sum(audit.anonymous_refusals.values()) == 300


def test_a_substring_scan_is_made_only_for_queries_up_to_the_bound(alice_api, settings):
    # One token of 600 characters: only a substring scan finds a piece of it.
    alice_api.post("/api/v1/sessions", {"id": "s"})
    alice_api.post(
        "/api/v1/sessions/s/items", {"role": "tool", "kind": "context", "text": "blob " + "abc" * 200}
    )

    def hits(query: str) -> int:
        body = {"query": query, "match": "keyword", "kind": "context"}
        return len(alice_api.post("/api/v1/sessions/s/recall", body).json()["results"]["context"])

    within, beyond = hits("bca" * 66), hits("bca" * 67)

    assert settings.OTTO_SUBSTRING_MAX_CHARS == 200
    assert (within, beyond) == (1, 0)


def test_a_substring_scan_reads_at_most_its_budget_of_text_newest_first(alice_api, settings):
    # The old turn holds the piece (inside a token: only a substring scan finds it); the three after it fill the scan's budget of 3,000 characters.
    alice_api.post("/api/v1/sessions", {"id": "s"})
    texts = ["old xxQUOTA7731xx " + "x" * 500] + ["y" * 1000, "z" * 1000, "new xxQUOTA9" + "w" * 988]
    for text in texts:
        alice_api.post("/api/v1/sessions/s/items", {"role": "tool", "kind": "context", "text": text})
    settings.OTTO_SUBSTRING_SCAN_CHARS = 3000

    def hits(query: str) -> tuple[list[str], str | None]:
        body = {"query": query, "match": "keyword", "kind": "context"}
        answer = alice_api.post("/api/v1/sessions/s/recall", body).json()
        found = [t["text"][:18] for p in answer["results"]["context"] for t in p["turns"] if t["hit"]]
        return found, answer["degraded"]

    beyond, newest = hits("QUOTA77"), hits("QUOTA9")
    settings.OTTO_SUBSTRING_SCAN_CHARS = 4000
    within = hits("QUOTA77")

    assert beyond == (
        [],
        "the substring scan read only the newest 3,000 characters of context "
        "(OTTO_SUBSTRING_SCAN_CHARS); older turns were not scanned",
    )
    assert newest[0] == ["new xxQUOTA9wwwwww"]
    assert within == (["old xxQUOTA7731xx "], None)


@pytest.mark.parametrize("folder", ["/etc", "/tmp/../etc/ssl", "relative/models"])
def test_a_reembed_naming_a_folder_outside_the_model_folders_is_refused_without_the_path(alice_api, folder):
    alice_api.post("/api/v1/sessions", {"id": "s"})

    response = alice_api.post("/api/v1/sessions/s/reembed", {"model": f"fastembed:some/model@{folder}"})

    assert response.status_code == 422
    assert response.json() == {
        "detail": "model 'fastembed:some/model': its folder is not one of the configured model folders (OTTO_MODEL_DIRS)",
        "code": "invalid",
        "field": "model",
    }
    assert Job.objects.count() == 0
