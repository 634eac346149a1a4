from __future__ import annotations

import pytest

from memory.models import Chunk, Item, Session

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    return "s"


def assert_refused(response, status, detail_part, field=None):
    assert response.status_code == status, response.content
    body = response.json()
    assert detail_part in body["detail"]
    assert isinstance(body["code"], str) and body["code"]
    if field is not None:
        assert body["field"] == field


def assert_nothing_written():
    assert (Item.objects.count(), Chunk.objects.count()) == (0, 0)


@pytest.mark.parametrize(
    "body, detail, field",
    [
        ({"role": "user", "text": ""}, "text must not be empty", "text"),
        ({"role": "user", "text": " \n\t "}, "text must not be empty", "text"),
        # Invisible format characters (zero-width space, joiners, BOM) show nothing, as spaces do.
        ({"role": "user", "text": "\u200b"}, "text must not be empty", "text"),
        ({"role": "user", "text": "\ufeff"}, "text must not be empty", "text"),
        ({"role": "user", "text": "\u200c\u200d \u2060\u00a0\u3000"}, "text must not be empty", "text"),
        (
            {"role": "robot", "text": "hi"},
            "role: Input should be 'user', 'assistant', 'tool' or 'system'",
            "role",
        ),
        (
            {"role": "user", "text": "hi", "kind": "diary"},
            "kind: Input should be 'history' or 'context'",
            "kind",
        ),
        ({"role": "user"}, "text: Field required", "text"),
        ({"role": "user", "text": 42}, "text: Input should be a valid string", "text"),
        ({"role": "user", "text": "hi", "protect": True}, "protect: unknown field", "protect"),
    ],
)
def test_bad_items_are_refused_with_the_field_named(alice_api, session, body, detail, field):
    assert_refused(alice_api.post("/api/v1/sessions/s/items", body), 422, detail, field)
    assert_nothing_written()


def test_ten_megabyte_text_is_refused(alice_api, session):
    response = alice_api.post("/api/v1/sessions/s/items", {"role": "tool", "text": "x" * 10_000_000})

    assert_refused(response, 422, "text is 10,000,000 characters; the limit is 1,000,000", "text")
    assert_nothing_written()


def test_a_body_over_the_upload_limit_is_413(alice_api, session, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = alice_api.post("/api/v1/sessions/s/items", {"role": "tool", "text": "x" * 2000})

    assert_refused(response, 413, "request body is larger")
    assert_nothing_written()


@pytest.mark.parametrize("raw", ["{not json", "", "[1, 2]", '"text"', "null"])
def test_malformed_json_is_refused(alice_api, session, raw):
    response = alice_api.post("/api/v1/sessions/s/items", raw=raw)

    assert 400 <= response.status_code < 500
    assert response.json()["detail"]
    assert_nothing_written()


# Said as the import says it of its document (field "$" there), where ninja answered every one
# 400 "Cannot parse request body".
@pytest.mark.parametrize(
    "raw, content_type, detail",
    [
        (
            b"{not json",
            "application/json",
            "is not JSON: Expecting property name enclosed in double quotes at line 1, column 2",
        ),
        (
            '{"role": "user", "text": "caf\xe9"}'.encode("latin-1"),
            "application/json",
            "is not UTF-8 text (byte 30 cannot be read)",
        ),
        (
            b"role=user&text=hi",
            "application/x-www-form-urlencoded",
            "is not JSON: Expecting value at line 1, column 1 (it was sent as "
            "application/x-www-form-urlencoded; the API reads JSON)",
        ),
    ],
)
def test_a_body_that_is_not_json_text_is_a_422_saying_so(alice_api, session, raw, content_type, detail):
    response = alice_api.client.post(
        "/api/v1/sessions/s/items",
        raw,
        content_type=content_type,
        HTTP_AUTHORIZATION=f"Bearer {alice_api.token}",
    )

    assert response.json() == {"detail": f"the body {detail}", "code": "invalid", "field": "body"}
    assert_nothing_written()


@pytest.mark.parametrize(
    "raw, detail",
    [
        (b"{not json", "is not JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
        (b'{"format": "caf\xe9"}', "is not UTF-8 text (byte 16 cannot be read)"),
    ],
)
def test_an_import_that_is_not_json_text_says_so_in_the_same_words(alice_api, raw, detail):
    response = alice_api.post("/api/v1/sessions/import?id=x", raw=raw)

    assert response.json() == {"detail": f"the document {detail}", "code": "invalid", "field": "$"}
    assert Session.objects.count() == 0


@pytest.mark.parametrize("sid", ["has space", "x" * 129, "semi;colon", "ümlaut", "a/b"])
def test_invalid_session_ids_are_refused(alice_api, sid):
    response = alice_api.post("/api/v1/sessions", {"id": sid})

    assert_refused(response, 422, "id", "id")
    assert Session.objects.count() == 0


# A title and a workspace are shown on one line each, as a turn's name is: what could break that
# line or reorder it is refused by the same rule.
@pytest.mark.parametrize(
    "body, detail, field",
    [
        (
            {"title": "Q3 \u202eplan"},
            "title must not contain control characters, line breaks or direction overrides (it holds U+202E)",
            "title",
        ),
        (
            {"title": "Q3\nplan"},
            "title must not contain control characters, line breaks or direction overrides (it holds U+000A)",
            "title",
        ),
        (
            {"workspace": "repo\u2028main"},
            "workspace must not contain control characters, line breaks or direction overrides (it holds U+2028)",
            "workspace",
        ),
        (
            {"workspace": "repo\u2066x"},
            "workspace must not contain control characters, line breaks or direction overrides (it holds U+2066)",
            "workspace",
        ),
    ],
)
def test_a_title_or_workspace_that_would_break_its_line_is_refused(alice_api, body, detail, field):
    response = alice_api.post("/api/v1/sessions", {"id": "t", **body})

    assert response.json() == {"detail": detail, "code": "invalid", "field": field}
    assert Session.objects.count() == 0


@pytest.mark.parametrize("budget", [{"x_budget": 0}, {"y_budget": -5}, {"x_budget": "lots"}])
def test_invalid_budgets_are_refused(alice_api, budget):
    response = alice_api.post("/api/v1/sessions", budget)

    assert response.status_code == 422
    assert response.json()["field"] in ("x_budget", "y_budget")
    assert Session.objects.count() == 0


@pytest.mark.parametrize("token", ["", "wrong", "otto_" + "a" * 43, "x" * 5000])
def test_missing_or_wrong_token_is_401(alice_api, session, token):
    response = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hi"}, token=token)

    assert_refused(response, 401, "bearer token")
    assert_nothing_written()


def test_no_authorization_header_is_401(client):
    response = client.get("/api/v1/sessions")

    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_revoked_token_is_401(alice, alice_api, session):
    from accounts.models import ApiToken
    from accounts.services import revoke_token

    revoke_token(token=ApiToken.objects.get(user=alice))

    assert_refused(alice_api.get("/api/v1/sessions"), 401, "bearer token")


def test_unknown_session_is_404(alice_api):
    assert_refused(
        alice_api.post("/api/v1/sessions/nope/items", {"role": "user", "text": "hi"}),
        404,
        "no session 'nope'",
    )
    assert_nothing_written()


def test_tokens_are_stored_hashed(alice_api):
    from accounts.models import ApiToken

    row = ApiToken.objects.get()
    assert alice_api.token not in (row.digest, row.prefix)
    assert row.digest == ApiToken.digest_of(alice_api.token)


def test_a_missing_field_called_query_is_named_as_query(alice_api, session):
    response = alice_api.post("/api/v1/sessions/s/recall", {"kind": "history"})

    assert response.status_code == 422
    assert (response.json()["field"], response.json()["detail"]) == ("query", "query: Field required")


def test_a_bad_query_parameter_is_named(alice_api):
    response = alice_api.get("/api/v1/sessions?limit=0")

    assert response.status_code == 422
    assert response.json()["field"] == "limit"


# A boolean is true or false and a number is a JSON number, as in an MCP tool's arguments: a
# string that reads like one ("no", "off", " 100 ") or a boolean for a number is refused, never
# guessed at. (Lax parsing stored "no" as false and pinned on "on".)
@pytest.mark.parametrize(
    "path, body, field",
    [
        ("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "protected": "no"}, "protected"),
        ("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "protected": "off"}, "protected"),
        ("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "protected": 0.0}, "protected"),
        ("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "pinned": "on"}, "pinned"),
        ("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "pinned": 1}, "pinned"),
        (
            "/api/v1/sessions/s/items/batch",
            {"items": [{"role": "user", "text": "hi", "protected": "yes"}]},
            "items.0.protected",
        ),
        ("/api/v1/sessions", {"id": "t", "protected_share": True}, "protected_share"),
        ("/api/v1/sessions", {"id": "t", "protected_share": "0.5"}, "protected_share"),
        ("/api/v1/sessions", {"id": "t", "x_budget": " 100 "}, "x_budget"),
        ("/api/v1/sessions", {"id": "t", "x_budget": "1e3"}, "x_budget"),
        ("/api/v1/sessions", {"id": "t", "y_budget": 1000.0}, "y_budget"),
        ("/api/v1/sessions/s/recall", {"query": "deadline", "max_tokens": True}, "max_tokens"),
    ],
)
def test_a_value_of_the_wrong_json_type_is_refused_not_coerced(alice_api, session, path, body, field):
    response = alice_api.post(path, body)

    assert_refused(response, 422, f"{field}: Input should be a valid", field)
    assert_nothing_written()
    assert list(Session.objects.values_list("sid", flat=True)) == ["s"]


def test_an_integer_is_a_float_fields_value(alice_api):
    response = alice_api.post("/api/v1/sessions", {"id": "t", "protected_share": 1})

    assert response.status_code == 201, response.content
    assert response.json()["protected_share"] == 1.0
