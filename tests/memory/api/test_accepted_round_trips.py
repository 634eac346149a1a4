"""Whatever an append accepts, export → import → export gives back byte for byte (issue 26, item 3):
a backup that only fails at restore is lost data. Random appends through the REST API — meta of
any JSON (NaN, Infinity, integers past 2^53, floats past it, deep and wide), names with any
characters, times in many forms, roles, kinds, pins — are each either accepted (201) or refused
with a 4xx naming a field, never a 5xx; every session they leave exports, imports and exports to
the same bytes (only the session's id and its own created/updated times differ).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db

VOLATILE = ("id", "created_at", "updated_at")

numbers = st.one_of(
    st.integers(-(2**53) + 1, 2**53 - 1),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**53 - 1, 2**53, -(2**53), 2**63, 1e20, 1e16, 9007199254740991.0, -0.0, 5e-324]),
    st.floats(),  # NaN and ±Infinity included
)
leaves = st.one_of(st.none(), st.booleans(), numbers, st.text(max_size=6))
json_values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
metas = st.none() | st.dictionaries(st.text(max_size=5), json_values, max_size=4)
offsets = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-3))])
times = st.one_of(
    st.datetimes(timezones=offsets).map(lambda t: t.isoformat()),
    st.sampled_from(
        [
            "2023-05-08T13:56:00Z",
            "2023-05-08 13:56+02:00",
            "20230508T135600-0330",
            "2023-05-08T13:56:00.123456789+02:00",
            "2023-05-08T13:56:00+02:00:30",
            "2023-05-08T13:56:00",
            "0001-01-01T00:30:00+01:00",
            "yesterday",
        ]
    ),
)
items = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool", "system"] * 3 + ["robot"]),
        "text": st.text(min_size=1, max_size=40) | st.sampled_from(["", " \n"]),
    },
    optional={
        "kind": st.sampled_from(["history", "context"]),
        "name": st.text(max_size=12) | st.text(max_size=70),
        "occurred_at": times,
        "meta": metas,
        "pinned": st.booleans(),
        "protected": st.none() | st.booleans(),
    },
)
requests = st.lists(st.lists(items, min_size=1, max_size=4), min_size=1, max_size=3)


def without_volatile(raw: bytes) -> bytes:
    """The export as sent, the session's own id and times blanked (each appears once, in `session`)."""
    session = json.loads(raw)["session"]
    for key in VOLATILE:
        written = json.dumps({key: session[key]}, ensure_ascii=False, separators=(",", ":"))[1:-1].encode()
        assert raw.count(written) == 1, key
        raw = raw.replace(written, f'"{key}":null'.encode())
    return raw


def strict_json(raw: bytes) -> dict:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in an answer")

    return json.loads(raw, parse_constant=refuse)


def append(api, body: list[dict]) -> tuple[int, dict]:
    # json.dumps writes NaN and Infinity as the bare words a hostile client sends.
    if len(body) == 1:
        response = api.post("/api/v1/sessions/prop/items", raw=json.dumps(body[0]))
    else:
        response = api.post("/api/v1/sessions/prop/items/batch", raw=json.dumps({"items": body}))
    return response.status_code, strict_json(response.content)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batches=requests)
@example(batches=[[{"role": "user", "text": "a NaN", "meta": {"a": float("nan")}}]])
@example(batches=[[{"role": "user", "text": "past 2^53", "meta": {"id": 2**60}}]])
@example(batches=[[{"role": "user", "text": "a float past 2^53", "meta": {"x": 1e20}}]])
@example(batches=[[{"role": "user", "text": "a name", "name": "Eve\u2028user"}]])
@pytest.mark.usefixtures("word_vectors")  # bytes are compared, not meaning
def test_whatever_an_append_accepts_exports_imports_and_exports_byte_for_byte(alice_api, batches):
    # Each example runs in a savepoint rolled back at its end: examples share one test transaction.
    savepoint = transaction.savepoint()
    try:
        # Small budgets: compactions run, so bullets (with names and times) are in the documents too.
        assert (
            alice_api.post("/api/v1/sessions", {"id": "prop", "x_budget": 40, "y_budget": 120}).status_code
            == 201
        )
        for body in batches:
            status, answer = append(alice_api, body)
            assert status in (201, 409, 422), (status, answer)
            if status != 201:
                assert answer["code"] == ("too_many_pins" if status == 409 else "invalid"), answer
                assert isinstance(answer.get("field"), str) and answer["field"], answer

        exported = alice_api.get("/api/v1/sessions/prop/export")
        imported = alice_api.post("/api/v1/sessions/import?id=prop-copy", raw=exported.content)
        again = alice_api.get("/api/v1/sessions/prop-copy/export")

        assert exported.status_code == 200, exported.content
        assert imported.status_code == 201, imported.content
        assert without_volatile(again.content) == without_volatile(exported.content)
        for turn in strict_json(exported.content)["pending"]:
            # Every time in the one form docs/api.md gives: seconds, maybe microseconds, an offset or Z.
            when = turn["occurred_at"]
            assert datetime.fromisoformat(when).utcoffset() is not None
            assert len(when) in (20, 25, 27, 32) and when[10] == "T", when
    finally:
        transaction.savepoint_rollback(savepoint)
