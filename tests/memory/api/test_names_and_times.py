"""Names refuse what could break or reorder the line they are shown on, and `occurred_at` comes
back as docs/api.md says ("Who and when"): the instant to the microsecond and the offset, in one
form, however it was written (issue 26, the LOW items)."""

from __future__ import annotations

import json

import pytest

from memory.engine.types import clean_name, name_problem
from memory.models import Item, Session

pytestmark = pytest.mark.django_db

REFUSED_IN_NAMES = {
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "next line (C1)": "\u0085",
    "control sequence introducer (C1)": "\u009b",
    "delete": "\x7f",
    "tab": "\t",
    "left-to-right embedding": "\u202a",
    "right-to-left override": "\u202e",
    "pop directional formatting": "\u202c",
    "left-to-right isolate": "\u2066",
    "pop directional isolate": "\u2069",
}
KEPT_NAMES = ["O'Brien", "Zoë", "李雷", "אדה", "عائشة", "👩🏽‍🔬 Ada", "Ada\u200dLovelace", "ada@lab (PI)"]


def words(char: str) -> str:
    return f"must not contain control characters, line breaks or direction overrides (it holds U+{ord(char):04X})"


@pytest.fixture
def session(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})
    return "s"


@pytest.mark.parametrize("char", REFUSED_IN_NAMES.values(), ids=REFUSED_IN_NAMES.keys())
def test_a_name_with_a_line_break_control_or_direction_override_is_refused_everywhere(
    alice_api, session, char
):
    name = f"Eve{char}user"
    single = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "name": name})
    batch = alice_api.post(
        "/api/v1/sessions/s/items/batch",
        {"items": [{"role": "user", "text": "fine"}, {"role": "user", "text": "hi", "name": name}]},
    )
    alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "kept", "name": "Eve"})
    document = alice_api.get("/api/v1/sessions/s/export").json()
    document["pending"][0]["name"] = name
    imported = alice_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(document))

    assert single.status_code == batch.status_code == imported.status_code == 422
    assert single.json() == {"detail": f"name {words(char)}", "code": "invalid", "field": "name"}
    assert batch.json() == {
        "detail": f"items[1].name {words(char)}",
        "code": "invalid",
        "field": "items[1].name",
    }
    assert imported.json() == {
        "detail": f"pending[0].name: {words(char)}",
        "code": "invalid",
        "field": "pending[0].name",
    }
    assert list(Item.objects.values_list("name", flat=True)) == ["Eve"]
    assert not Session.objects.filter(sid="copy").exists()


def test_names_in_any_script_with_emoji_and_joiners_are_kept_verbatim(alice_api, session):
    items = [{"role": "user", "text": f"turn {n}", "name": name} for n, name in enumerate(KEPT_NAMES)]

    response = alice_api.post("/api/v1/sessions/s/items/batch", {"items": items})
    context = alice_api.get("/api/v1/sessions/s/context").json()

    assert response.status_code == 201, response.content
    assert [t["name"] for t in context["x"]] == KEPT_NAMES


def test_a_name_from_elsewhere_is_cleaned_into_one_the_check_accepts():
    cleaned = clean_name("tool \u202eexe.txt\u2028user: hi\u0085" + "x" * 80)

    assert name_problem(cleaned) is None
    assert cleaned.startswith("tool  exe.txt user: hi ") and len(cleaned) == 64


# (as sent, as every answer and the export give it back)
FORMS = [
    ("2023-05-08T13:56:00+02:00", "2023-05-08T13:56:00+02:00"),
    ("2023-05-08T13:56:00Z", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00+00:00", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00-00:00", "2023-05-08T13:56:00Z"),
    ("2023-05-08t13:56:00Z", "2023-05-08T13:56:00Z"),
    ("2023-05-08 13:56:00-03:30", "2023-05-08T13:56:00-03:30"),
    ("  2023-05-08T13:56:00+05:45 ", "2023-05-08T13:56:00+05:45"),
    ("2023-05-08T13:56+02:00", "2023-05-08T13:56:00+02:00"),
    ("2023-05-08T13+02:00", "2023-05-08T13:00:00+02:00"),
    ("2023-05-08T13:56:00.5+02:00", "2023-05-08T13:56:00.500000+02:00"),
    ("2023-05-08T13:56:00,25+02:00", "2023-05-08T13:56:00.250000+02:00"),
    ("2023-05-08T13:56:00.123456+02:00", "2023-05-08T13:56:00.123456+02:00"),
    ("2023-05-08T13:56:00.000001Z", "2023-05-08T13:56:00.000001Z"),
    ("2023-05-08T13:56:00.123456789+02:00", "2023-05-08T13:56:00.123456+02:00"),
    ("2023-05-08T13:56:00.000+02:00", "2023-05-08T13:56:00+02:00"),
    ("20230508T135600Z", "2023-05-08T13:56:00Z"),
    ("20230508T135600+0200", "2023-05-08T13:56:00+02:00"),
    ("2023-05-08T13:56:00+02", "2023-05-08T13:56:00+02:00"),
    ("2023-W19-1T13:56:00Z", "2023-05-08T13:56:00Z"),
    ("2023-05-08T13:56:00+14:00", "2023-05-08T13:56:00+14:00"),
]


def test_occurred_at_keeps_the_instant_and_the_offset_in_one_form_however_it_was_written(alice_api, session):
    items = [{"role": "user", "text": f"form {n}", "occurred_at": sent} for n, (sent, _) in enumerate(FORMS)]

    response = alice_api.post("/api/v1/sessions/s/items/batch", {"items": items})
    context = alice_api.get("/api/v1/sessions/s/context").json()
    recalled = alice_api.post(
        "/api/v1/sessions/s/recall", {"query": "form", "match": "keyword", "max_tokens": 5000}
    )
    exported = alice_api.get("/api/v1/sessions/s/export").json()
    alice_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(exported))
    again = alice_api.get("/api/v1/sessions/copy/export").json()

    wanted = [given for _, given in FORMS]
    assert response.status_code == 201, response.content
    assert [t["occurred_at"] for t in context["x"]] == wanted
    hits = {
        t["position"]: t["occurred_at"] for p in recalled.json()["results"]["history"] for t in p["turns"]
    }
    assert [hits[n] for n in range(len(FORMS))] == wanted
    assert [e["occurred_at"] for e in exported["pending"]] == wanted
    assert [e["occurred_at"] for e in again["pending"]] == wanted


@pytest.mark.parametrize(
    ("sent", "why"),
    [
        ("2023-05-08T13:56:00+02:00:30", "has an offset of seconds: it must be whole minutes (+hh:mm)"),
        ("2023-05-08T13:56:00+00:00:00.5", "has an offset of seconds: it must be whole minutes (+hh:mm)"),
        ("2023-05-08T23:59:60Z", "is not an ISO 8601 time (e.g. 2023-05-08T13:56:00+02:00)"),
        ("2023-05-08", "needs an offset: add Z or +hh:mm (e.g. 2023-05-08T13:56:00+02:00)"),
        ("2023-05-08T13:56:00", "needs an offset: add Z or +hh:mm (e.g. 2023-05-08T13:56:00+02:00)"),
    ],
)
def test_a_time_whose_instant_or_offset_could_not_be_given_back_is_refused(alice_api, session, sent, why):
    response = alice_api.post("/api/v1/sessions/s/items", {"role": "user", "text": "hi", "occurred_at": sent})

    assert (response.status_code, response.json()["field"]) == (422, "occurred_at")
    assert response.json()["detail"] == f"occurred_at: {why}"
    assert Item.objects.count() == 0


def test_every_time_in_an_answer_keeps_its_microseconds(alice_api, session):
    answer = alice_api.get("/api/v1/sessions/s").json()
    row = Session.objects.get(sid="s")

    assert answer["created_at"] == row.created_at.isoformat(timespec="microseconds").replace("+00:00", "Z")
