"""The edges fuzzing and probing found, each pinned: once a 500 or a broken promise, now a clear 4xx."""

from __future__ import annotations

import json

import pytest

from tests.reliability.snapshot import all_rows

pytestmark = pytest.mark.django_db


def test_an_offset_past_any_database_integer_is_a_422(alice_api):
    response = alice_api.get(f"/api/v1/sessions?offset={2**70}")

    assert (response.status_code, response.json()["detail"]) == (
        422,
        "offset: Input should be less than or equal to 1000000000",
    )


def test_a_lessons_query_longer_than_a_request_line_carries_is_a_422(alice_api):
    response = alice_api.get("/api/v1/lessons/errors?q=" + "x" * 2001)

    assert (response.status_code, response.json()["detail"]) == (
        422,
        "q: String should have at most 2000 characters",
    )


@pytest.mark.parametrize("sid", ["x" * 129, "a%00b", "demo%0A", "x" * 5000])
def test_a_session_id_that_cannot_exist_is_no_session(alice_api, sid):
    alice_api.post("/api/v1/sessions", {"id": "demo"})

    response = alice_api.get(f"/api/v1/sessions/{sid}")

    assert (response.status_code, response.json()) == (
        404,
        {"detail": "no session with that id", "code": "not_found"},
    )


@pytest.mark.parametrize("job_id", ["a%00b", "x" * 33, "../x", "a/b"])
def test_a_job_id_that_cannot_exist_is_no_job(alice_api, job_id):
    response = alice_api.get(f"/api/v1/jobs/{job_id}")

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_a_session_id_with_a_trailing_newline_is_refused(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "demo"})
    document = alice_api.get("/api/v1/sessions/demo/export").json()
    before = all_rows()

    response = alice_api.post("/api/v1/sessions/import?id=copy%0A", raw=json.dumps(document))

    assert (response.status_code, response.json()["field"]) == (422, "id")
    assert all_rows() == before


def test_a_body_that_is_not_json_is_a_documented_422_saying_so(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "demo"})

    response = alice_api.post("/api/v1/sessions/demo/items", raw="{not json")
    documented = alice_api.get("/api/v1/openapi.json").json()["paths"]["/api/v1/sessions/{sid}/items"]["post"]

    assert (response.status_code, response.json()) == (
        422,
        {
            "detail": "the body is not JSON: Expecting property name enclosed in double quotes at line 1, column 2",
            "code": "invalid",
            "field": "body",
        },
    )
    assert sorted(documented["responses"]) == ["201", "400", "401", "404", "409", "413", "422", "429", "503"]


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v2/sessions", "/api/v1/sessions/a/b/c"])
def test_an_unknown_api_path_is_a_json_404(alice_api, path):
    response = alice_api.get(path)

    assert (response.status_code, response.json()) == (
        404,
        {"detail": "no such API path", "code": "not_found"},
    )


def test_head_on_a_path_that_takes_get_answers_as_get_does_with_no_body(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "demo"})
    got = alice_api.get("/api/v1/sessions/demo/context")

    head = alice_api.call("HEAD", "/api/v1/sessions/demo/context")
    unknown = alice_api.call("HEAD", "/api/v1/sessions/nope/context")
    anonymous = alice_api.client.head("/api/v1/sessions/demo/context")

    assert (head.status_code, head.content) == (200, b"")
    assert head["Content-Type"] == got["Content-Type"]
    assert int(head["Content-Length"]) == len(got.content)
    assert (unknown.status_code, unknown.content) == (404, b"")
    assert anonymous.status_code == 401


def test_a_method_a_path_does_not_take_is_a_json_405_naming_the_allowed_ones(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "demo"})
    before = all_rows()

    response = alice_api.call("PUT", "/api/v1/sessions/demo/items", {"role": "user", "text": "hi"})

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["code"] == "method_not_allowed"
    assert response.json()["detail"].startswith("PUT is not allowed on /api/v1/sessions/demo/items")
    assert all_rows() == before


@pytest.mark.parametrize(
    "method, path, allowed",
    [
        ("DELETE", "/api/v1/sessions/demo/context", "GET, HEAD"),
        ("PUT", "/api/v1/sessions", "GET, HEAD, POST"),
        ("PATCH", "/api/v1/sessions/demo", "DELETE, GET, HEAD"),
        ("HEAD", "/api/v1/sessions/demo/items", "POST"),
    ],
)
def test_a_405_on_an_api_path_that_takes_get_lists_head_too(alice_api, method, path, allowed):
    alice_api.post("/api/v1/sessions", {"id": "demo"})

    response = alice_api.call(method, path)

    # ninja lists a path's methods in no fixed order (a set).
    assert (response.status_code, set(response["Allow"].split(", "))) == (405, set(allowed.split(", ")))
    if method != "HEAD":
        assert response.json() == {
            "detail": f"{method} is not allowed on {path}; it takes {response['Allow']}",
            "code": "method_not_allowed",
        }
