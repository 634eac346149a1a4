"""One JSON number policy for everything stored (issue 26, item 3): integers and floats within
±(2^53 - 1), and finite. Beyond it a 422 names the field down to the value (append, batch, notes,
/runs/fit, import alike); no answer ever holds a bare NaN or Infinity."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import RequestFactory

from memory.models import Item, ScopedMemory, Session

pytestmark = pytest.mark.django_db

LIMIT = 2**53 - 1
OUT_OF_RANGE = (
    "is out of range: a number must lie between -9,007,199,254,740,991 and 9,007,199,254,740,991 (2^53 - 1)"
)
NOT_FINITE = "must be a finite number (NaN and Infinity are not JSON)"


def strict_json(raw: bytes) -> object:
    """The answer as JSON that any reader takes: a bare NaN or Infinity is an error, not a float."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in an answer: {raw[:300]!r}")

    return json.loads(raw, parse_constant=refuse)


def refusal(response) -> tuple[int, str, str, str]:
    body = strict_json(response.content)
    return response.status_code, body["code"], body["field"], body["detail"]  # type: ignore[index]


@pytest.fixture
def session(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    return "s"


# (the meta as the client writes it, the path below meta named, the words)
BAD_META = [
    ('{"a": NaN}', ".a", NOT_FINITE),
    ('{"a": Infinity}', ".a", NOT_FINITE),
    ('{"a": {"b": [1, -Infinity]}}', ".a.b.1", NOT_FINITE),
    ('{"a": 1e400}', ".a", NOT_FINITE),
    (f'{{"a": {2**53}}}', ".a", OUT_OF_RANGE),
    (f'{{"a": {-(2**53)}}}', ".a", OUT_OF_RANGE),
    ('{"a": 18446744073709551616}', ".a", OUT_OF_RANGE),
    # PostgreSQL's jsonb gives 1e20 back as the integer 100000000000000000000: a float is held to
    # the same range, or its export would not import.
    ('{"a": 1e20}', ".a", OUT_OF_RANGE),
]


@pytest.mark.parametrize(("meta", "below", "words"), BAD_META)
def test_an_append_with_a_number_outside_the_policy_is_a_422_naming_its_path(
    alice_api, session, meta, below, words
):
    response = alice_api.post(
        "/api/v1/sessions/s/items", raw=f'{{"role": "user", "text": "hi", "meta": {meta}}}'
    )

    assert refusal(response) == (422, "invalid", f"meta{below}", f"meta{below}: {words}")
    assert Item.objects.count() == 0


@pytest.mark.parametrize(("meta", "below", "words"), BAD_META)
def test_a_batch_with_a_number_outside_the_policy_is_a_422_and_writes_no_item(
    alice_api, session, meta, below, words
):
    raw = (
        f'{{"items": [{{"role": "user", "text": "fine"}}, {{"role": "user", "text": "hi", "meta": {meta}}}]}}'
    )

    response = alice_api.post("/api/v1/sessions/s/items/batch", raw=raw)

    field = f"items.1.meta{below}"
    assert refusal(response) == (422, "invalid", field, f"{field}: {words}")
    assert Item.objects.count() == 0


def test_numbers_inside_the_policy_are_stored_and_come_back_as_sent(alice_api, session):
    meta = {"max": LIMIT, "min": -LIMIT, "half": 1.5, "tiny": 1e-300, "zero": -0.0, "f": 9007199254740991.0}

    response = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "meta": meta})
    (turn,) = strict_json(alice_api.get("/api/v1/sessions/s/context").content)["x"]  # type: ignore[index]

    assert response.status_code == 201, response.content
    # Equal as JSON values, each of its own type (PostgreSQL's jsonb orders the keys its own way).
    assert turn["meta"] == meta
    assert {k: type(v) for k, v in turn["meta"].items()} == {k: type(v) for k, v in meta.items()}


def test_a_nan_is_a_422_not_a_503_db_unavailable(alice_api, session):
    response = alice_api.post(
        "/api/v1/sessions/s/items", raw='{"role": "user", "text": "hi", "meta": {"a": NaN}}'
    )

    assert (response.status_code, strict_json(response.content)["code"]) == (422, "invalid")  # type: ignore[index]


@pytest.mark.parametrize(
    ("path", "raw", "field", "words"),
    [
        (
            "/api/v1/sessions/s/items",
            '{"role": "user", "text": "hi", "meta": {"a": 1%s}}',
            "body",
            "5,001 digits",
        ),
        (
            "/api/v1/runs/fit",
            '{"model": "a:b", "messages": [{"role": "user", "content": "x", "n": 1%s}]}',
            "body",
            "5,001 digits",
        ),
        ("/api/v1/sessions/import?id=t", '{"format": "ottoweb.session", "n": 1%s}', "$", "5,001 digits"),
    ],
)
def test_a_number_of_more_digits_than_python_reads_is_a_422(alice_api, session, path, raw, field, words):
    response = alice_api.post(path, raw=raw % ("0" * 5000))

    status, code, named, detail = refusal(response)
    assert (status, code, named) == (422, "invalid", field)
    assert words in detail and "4,300" in detail


def test_fit_refuses_a_number_outside_the_policy_in_a_message_and_never_echoes_nan(alice_api):
    raw = (
        '{"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "hi", "x_vendor": {"t": NaN}}]}'
    )
    big = json.dumps(
        {"model": "openai:gpt-4o", "messages": [{"role": "user", "content": "hi", "seed": 2**63}]}
    )
    listed = '{"model": "openai:gpt-4o", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "w": Infinity}]}]}'

    answers = [refusal(alice_api.post("/api/v1/runs/fit", raw=body)) for body in (raw, big, listed)]

    assert answers == [
        (422, "invalid", "messages.0.x_vendor.t", f"messages.0.x_vendor.t: {NOT_FINITE}"),
        (422, "invalid", "messages.0.seed", f"messages.0.seed: {OUT_OF_RANGE}"),
        (422, "invalid", "messages.0.content.0.w", f"messages.0.content.0.w: {NOT_FINITE}"),
    ]


def test_notes_and_sessions_refuse_nan_in_their_fields(alice_api):
    answers = [
        refusal(
            alice_api.post(
                "/api/v1/memory/remember", raw='{"content": "x", "conversationId": "c", "key": NaN}'
            )
        ),
        refusal(
            alice_api.post("/api/v1/memory/recall", raw='{"query": "x", "conversationId": "c", "limit": NaN}')
        ),
        refusal(alice_api.post("/api/v1/sessions", raw='{"id": "n", "protected_share": Infinity}')),
    ]

    assert [a[:3] for a in answers] == [
        (422, "invalid", "key"),
        (422, "invalid", "limit"),
        (422, "invalid", "protected_share"),
    ]
    assert answers[2][3] == "protected_share: Input should be a finite number"
    assert (ScopedMemory.objects.count(), Session.objects.count()) == (0, 0)


@pytest.mark.parametrize(
    ("value", "words"), [(float("nan"), NOT_FINITE), (2**53, OUT_OF_RANGE), (1e20, OUT_OF_RANGE)]
)
def test_an_import_with_a_number_outside_the_policy_names_its_path(alice_api, session, value, words):
    alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "meta": {"a": [1, 2]}})
    document = strict_json(alice_api.get("/api/v1/sessions/s/export").content)
    document["pending"][0]["meta"]["a"][1] = value  # type: ignore[index]

    response = alice_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(document))

    assert refusal(response) == (422, "invalid", "pending[0].meta.a[1]", f"pending[0].meta.a[1]: {words}")
    assert not Session.objects.filter(sid="copy").exists()


def test_a_query_number_outside_the_policy_is_a_422(alice_api):
    response = alice_api.get(f"/api/v1/lessons/errors?offset={2**63}")

    assert refusal(response) == (422, "invalid", "offset", f"offset: {OUT_OF_RANGE}")


def test_the_answer_renderer_writes_a_value_that_is_not_finite_as_null_and_logs_it(caplog):
    from ottoweb.api import AnswerRenderer

    request = RequestFactory().get("/api/v1/sessions")

    with caplog.at_level(logging.ERROR, logger="ottoweb.api"):
        text = AnswerRenderer().render(
            request, {"score": float("nan"), "ok": [1.5, float("-inf")]}, response_status=200
        )

    assert strict_json(text.encode()) == {"score": None, "ok": [1.5, None]}
    assert "not finite" in caplog.text
