"""Pins (issue 25): a pinned turn stays verbatim in the view, whatever its age, until unpinned; a
session's pins are capped; a refused pin writes nothing; export and import keep pins."""

from __future__ import annotations

import json

import pytest

from accounts.models import AuditEntry
from memory import services
from memory.engine import tokens as tok
from memory.models import Bullet, Item, Job, Session
from tests.reliability.snapshot import all_rows

pytestmark = pytest.mark.django_db

RULE = "Never deploy on Fridays, whatever the release manager says."
ANSWER = "The staging password rotates every ninety days under ticket ZEBRA-4471."


def new_session(api, sid="pins", **settings):
    response = api.post("/api/v1/sessions", {"id": sid, **settings})
    assert response.status_code == 201, response.content
    return sid


def append(api, sid, *items):
    response = api.post(f"/api/v1/sessions/{sid}/items/batch", {"items": list(items)})
    assert response.status_code == 201, response.content
    return [i["position"] for i in response.json()["items"]]


def chatter(n):
    return {"role": "assistant", "text": f"Status {n}: the build of module {n} is green and the tests pass."}


def pin(api, sid, position, pinned=True):
    return api.post(f"/api/v1/sessions/{sid}/items/{position}/pin", {"pinned": pinned})


def context(api, sid):
    response = api.get(f"/api/v1/sessions/{sid}/context")
    assert response.status_code == 200, response.content
    return response.json()


def turns(view):
    return view["y_raw"] + view["x"]


def pinned_bullets(view):
    return [(b["text"], b["protected"]) for b in view["bullets"] if b["pinned"]]


def shows(view, role, text):
    """Whether the prompt text holds `text` verbatim as one entry of `role` ("assistant: …", or
    "assistant (Otto · 8 May 2023): …" when it says who and when)."""
    return any(
        line == f"{role}: {text}" or (line.startswith(f"{role} (") and line.endswith(f"): {text}"))
        for line in view["text"].splitlines()
    )


# --- appending pinned ------------------------------------------------------------------------------


def test_an_item_appended_pinned_comes_back_pinned(alice_api):
    sid = new_session(alice_api)
    response = alice_api.post(f"/api/v1/sessions/{sid}/items", {"role": "user", "text": RULE, "pinned": True})

    (turn,) = context(alice_api, sid)["x"]
    assert response.status_code == 201, response.content
    assert (turn["text"], turn["pinned"]) == (RULE, True)
    assert Item.objects.get(session__sid=sid).pinned is True


def test_a_batch_pins_only_the_items_sent_pinned(alice_api):
    sid = new_session(alice_api)

    append(
        alice_api,
        sid,
        {"role": "user", "text": RULE, "pinned": True},
        chatter(1),
        {"role": "assistant", "text": ANSWER, "pinned": True},
        {"role": "user", "text": "Thanks.", "pinned": False},
    )

    assert [(t["text"], t["pinned"]) for t in turns(context(alice_api, sid))] == [
        (RULE, True),
        (chatter(1)["text"], False),
        (ANSWER, True),
        ("Thanks.", False),
    ]


def test_a_context_item_cannot_be_pinned_and_nothing_is_written(alice_api):
    sid = new_session(alice_api)
    before = all_rows()

    response = alice_api.post(
        f"/api/v1/sessions/{sid}/items/batch",
        {"items": [chatter(1), {"role": "tool", "text": "exit 0", "kind": "context", "pinned": True}]},
    )

    assert response.status_code == 422, response.content
    assert (response.json()["code"], response.json()["field"]) == ("invalid", "items[1].pinned")
    assert "context item cannot be pinned" in response.json()["detail"]
    assert all_rows() == before


# --- pinning and unpinning a turn ------------------------------------------------------------------


def test_pinning_a_turn_in_x_answers_the_turn_and_unpinning_clears_it(alice_api):
    sid = new_session(alice_api)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": ANSWER})

    pinned = pin(alice_api, sid, position)
    shown = context(alice_api, sid)["x"]
    unpinned = pin(alice_api, sid, position, pinned=False)

    assert pinned.status_code == 200, pinned.content
    assert {k: pinned.json()[k] for k in ("text", "role", "position", "pinned")} == {
        "text": ANSWER,
        "role": "assistant",
        "position": position,
        "pinned": True,
    }
    assert [t["pinned"] for t in shown] == [True]
    assert (unpinned.status_code, unpinned.json()["pinned"]) == (200, False)
    assert [t["pinned"] for t in context(alice_api, sid)["x"]] == [False]


def test_a_turn_pinned_in_y_is_carried_verbatim_through_compaction(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=400)
    positions = append(alice_api, sid, {"role": "assistant", "text": ANSWER}, *[chatter(n) for n in range(6)])
    assert [t["position"] for t in context(alice_api, sid)["y_raw"]][0] == positions[0]

    assert pin(alice_api, sid, positions[0]).status_code == 200
    compacted = alice_api.post(f"/api/v1/sessions/{sid}/memory", {"action": "compact"})

    view = context(alice_api, sid)
    assert compacted.json()["removed"] == 7
    assert pinned_bullets(view) == [(ANSWER, True)]
    assert shows(view, "assistant", ANSWER)


def test_pinning_an_archived_turn_brings_it_back_into_the_view_verbatim(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=200)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": ANSWER})
    for n in range(30):
        append(alice_api, sid, chatter(n))
    before = context(alice_api, sid)
    assert Item.objects.get(session__sid=sid, position=position).tier == "a"
    assert not shows(before, "assistant", ANSWER)

    response = pin(alice_api, sid, position)

    view = context(alice_api, sid)
    assert (response.status_code, response.json()["pinned"], response.json()["text"]) == (200, True, ANSWER)
    assert pinned_bullets(view) == [(ANSWER, True)]
    assert shows(view, "assistant", ANSWER)
    (bullet,) = [b for b in view["bullets"] if b["pinned"]]
    assert bullet["hash_refs"] == [response.json()["hash"]]


def test_pinning_an_archived_turn_that_takes_y_over_budget_compacts_it_back_within(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    long_answer = " ".join([ANSWER] * 8)
    size = tok.count_tokens(long_answer)
    assert 100 < size <= 150  # within the protected share (half of Y)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": long_answer})
    # Until Y has less room left than the pin takes (and the turn is archived).
    for n in range(200):
        append(alice_api, sid, chatter(n))
        before = context(alice_api, sid)
        if before["bullets"] and before["tokens"]["bullets"] + before["tokens"]["y_raw"] > 300 - size:
            break
    assert Item.objects.get(session__sid=sid, position=position).tier == "a"

    assert pin(alice_api, sid, position).status_code == 200

    view = context(alice_api, sid)
    assert pinned_bullets(view) == [(long_answer, True)]
    assert view["bullets"][0]["generation"] == before["bullets"][0]["generation"] + 1
    assert view["tokens"]["bullets"] + view["tokens"]["y_raw"] <= 300
    assert view["over_budget"] is False


def test_with_a_worker_the_compaction_a_pin_makes_due_is_queued_as_an_appends_would_be(alice_api, settings):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    long_answer = " ".join([ANSWER] * 8)
    size = tok.count_tokens(long_answer)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": long_answer})
    for n in range(200):
        append(alice_api, sid, chatter(n))
        before = context(alice_api, sid)
        if before["bullets"] and before["tokens"]["bullets"] + before["tokens"]["y_raw"] > 300 - size:
            break
    settings.OTTO_COMPACTION = "job"

    assert pin(alice_api, sid, position).status_code == 200

    job = Job.objects.get(session__sid=sid, kind="compact", status="queued")
    services.run_compaction_job(job_id=job.id, worker="test:1")
    view = context(alice_api, sid)
    assert pinned_bullets(view) == [(long_answer, True)]
    assert view["tokens"]["bullets"] + view["tokens"]["y_raw"] <= 300


def test_pinning_a_persons_protected_turn_flags_its_bullet_instead_of_adding_one(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=400)
    (position,) = append(alice_api, sid, {"role": "user", "text": RULE})
    for n in range(12):
        append(alice_api, sid, chatter(n))
    alice_api.post(f"/api/v1/sessions/{sid}/memory", {"action": "compact"})
    assert [b["text"] for b in context(alice_api, sid)["bullets"] if b["protected"]] == [RULE]

    assert pin(alice_api, sid, position).status_code == 200

    view = context(alice_api, sid)
    assert [(b["text"], b["pinned"]) for b in view["bullets"] if b["protected"]] == [(RULE, True)]
    assert view["text"].count(RULE) == 1


def test_pinning_twice_is_one_pin(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=200)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": ANSWER})
    for n in range(30):
        append(alice_api, sid, chatter(n))

    first = pin(alice_api, sid, position)
    second = pin(alice_api, sid, position)

    assert (first.status_code, second.status_code) == (200, 200)
    assert first.json() == second.json()
    assert pinned_bullets(context(alice_api, sid)) == [(ANSWER, True)]
    assert Bullet.objects.filter(session__sid=sid, superseded=False, pinned=True).count() == 1


def test_unpinning_an_archived_turn_leaves_its_bullet_protected_and_unpinned(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=200)
    (position,) = append(alice_api, sid, {"role": "assistant", "text": ANSWER})
    for n in range(30):
        append(alice_api, sid, chatter(n))
    pin(alice_api, sid, position)

    response = pin(alice_api, sid, position, pinned=False)

    view = context(alice_api, sid)
    assert (response.status_code, response.json()["pinned"]) == (200, False)
    assert [(b["text"], b["protected"], b["pinned"]) for b in view["bullets"] if b["text"] == ANSWER] == [
        (ANSWER, True, False)
    ]
    assert Item.objects.get(session__sid=sid, position=position).pinned is False


def test_a_pinned_turn_never_leaves_the_view_through_many_compactions(alice_api):
    sid = new_session(alice_api, x_budget=100, y_budget=300)
    rule = {"role": "user", "text": RULE}
    answer = {"role": "assistant", "text": ANSWER}
    positions = append(alice_api, sid, rule, chatter(0), answer)
    assert pin(alice_api, sid, positions[0]).status_code == 200
    assert pin(alice_api, sid, positions[2]).status_code == 200
    largest = 0
    for n in range(1, 500):
        # Two of every three turns the person's own (protected), so the protected share is always
        # full and the oldest of them keep leaving the view.
        if n % 3:
            turn = {
                "role": "user",
                "text": f"Request {n}: please also check the {n}th invoice and its ledger.",
            }
        else:
            turn = chatter(n)
        largest = max(largest, tok.count_tokens(turn["text"]))
        append(alice_api, sid, turn)
        view = context(alice_api, sid)

        assert shows(view, "user", RULE) and shows(view, "assistant", ANSWER), n
        assert view["tokens"]["total"] <= 100 + 300 + largest, n

    assert sorted(pinned_bullets(view)) == sorted([(RULE, True), (ANSWER, True)])
    assert any(b["quote"] for b in view["bullets"]), "the person's other early turns left the view"
    assert view["bullets"][0]["generation"] > 20


def test_recall_says_which_turns_are_pinned(alice_api):
    sid = new_session(alice_api)
    append(alice_api, sid, {"role": "assistant", "text": ANSWER, "pinned": True}, chatter(1))

    found = alice_api.post(f"/api/v1/sessions/{sid}/recall", {"query": "ZEBRA-4471", "match": "keyword"})

    turns_found = [(t["text"], t["pinned"]) for p in found.json()["results"]["history"] for t in p["turns"]]
    assert (ANSWER, True) in turns_found and (chatter(1)["text"], False) in turns_found


def test_a_pin_is_audited(alice_api):
    sid = new_session(alice_api)
    (position,) = append(alice_api, sid, chatter(1))

    pin(alice_api, sid, position)
    pin(alice_api, sid, 99)

    rows = AuditEntry.objects.filter(path__endswith="/pin").order_by("id")
    assert list(rows.values_list("action", "session_sid", "status", "outcome")) == [
        ("POST /api/v1/sessions/{sid}/items/{position}/pin", sid, 200, "ok"),
        ("POST /api/v1/sessions/{sid}/items/{position}/pin", sid, 404, "refused"),
    ]


# --- refusals: each writes nothing ----------------------------------------------------------------


def test_a_pin_past_the_count_cap_is_a_409_naming_it_and_writes_nothing(alice_api, settings):
    settings.OTTO_MAX_PINS = 2
    sid = new_session(alice_api)
    positions = append(alice_api, sid, *[chatter(n) for n in range(3)])
    pin(alice_api, sid, positions[0])
    pin(alice_api, sid, positions[1])
    before = all_rows()

    response = pin(alice_api, sid, positions[2])

    assert response.status_code == 409, response.content
    assert (response.json()["code"], response.json()["field"]) == ("too_many_pins", "pinned")
    assert "OTTO_MAX_PINS = 2" in response.json()["detail"]
    assert all_rows() == before


def test_a_pin_past_the_protected_share_is_a_409_naming_it_and_writes_nothing(alice_api):
    # A protected share of 0.25 of a Y of 200 tokens: pins may hold 50 tokens.
    sid = new_session(alice_api, y_budget=200, protected_share=0.25)
    long_answer = " ".join([ANSWER] * 2)
    assert 25 < tok.count_tokens(long_answer) <= 50 < 2 * tok.count_tokens(long_answer)
    positions = append(
        alice_api,
        sid,
        {"role": "assistant", "text": long_answer},
        {"role": "user", "text": long_answer + " Again."},
    )
    assert pin(alice_api, sid, positions[0]).status_code == 200
    before = all_rows()

    response = pin(alice_api, sid, positions[1])

    assert response.status_code == 409, response.content
    assert response.json()["code"] == "too_many_pins"
    assert "at most 50 tokens" in response.json()["detail"] and "protected share" in response.json()["detail"]
    assert all_rows() == before


def test_a_batch_past_the_cap_is_a_409_and_appends_nothing(alice_api, settings):
    settings.OTTO_MAX_PINS = 2
    sid = new_session(alice_api)
    append(alice_api, sid, {"role": "user", "text": RULE, "pinned": True})
    before = all_rows()

    response = alice_api.post(
        f"/api/v1/sessions/{sid}/items/batch",
        {
            "items": [
                chatter(1),
                {"role": "assistant", "text": ANSWER, "pinned": True},
                {"role": "assistant", "text": "One pin too many.", "pinned": True},
            ]
        },
    )

    assert response.status_code == 409, response.content
    assert (response.json()["code"], response.json()["field"]) == ("too_many_pins", "items[2].pinned")
    assert all_rows() == before


def test_a_single_append_past_the_protected_share_is_a_409_and_appends_nothing(alice_api):
    sid = new_session(alice_api, y_budget=100)
    before = all_rows()

    response = alice_api.post(
        f"/api/v1/sessions/{sid}/items", {"role": "user", "text": " ".join([RULE] * 8), "pinned": True}
    )

    assert response.status_code == 409, response.content
    assert (response.json()["code"], response.json()["field"]) == ("too_many_pins", "pinned")
    assert all_rows() == before


def test_pinning_an_unknown_position_is_a_404_and_writes_nothing(alice_api):
    sid = new_session(alice_api)
    append(alice_api, sid, chatter(1))
    before = all_rows()

    answers = [pin(alice_api, sid, position) for position in (7, 2**63, 10**30)]

    assert [(a.status_code, a.json()["code"]) for a in answers] == [(404, "not_found")] * 3
    assert answers[0].json()["detail"] == "no history turn at position 7"
    assert all_rows() == before


def test_a_context_items_position_names_no_turn_to_pin(alice_api):
    sid = new_session(alice_api)
    response = alice_api.post(
        f"/api/v1/sessions/{sid}/items", {"role": "tool", "text": "exit 0", "kind": "context"}
    )
    assert response.json()["kind"] == "context"
    before = all_rows()

    answer = pin(alice_api, sid, response.json()["position"])

    assert (answer.status_code, answer.json()["code"]) == (404, "not_found")
    assert Item.objects.get(session__sid=sid).pinned is False
    assert all_rows() == before


def test_another_users_turn_cannot_be_pinned(alice_api, bob_api):
    sid = new_session(alice_api)
    (position,) = append(alice_api, sid, chatter(1))
    bob_api.get("/api/v1/sessions")  # the first use of bob's token is recorded on it
    before = all_rows()

    answer = pin(bob_api, sid, position)

    assert (answer.status_code, answer.json()) == (
        404,
        {"detail": f"no session {sid!r}", "code": "not_found"},
    )
    assert all_rows() == before


def test_a_pin_needs_its_pinned_field(alice_api):
    sid = new_session(alice_api)
    (position,) = append(alice_api, sid, chatter(1))

    answers = [
        alice_api.post(f"/api/v1/sessions/{sid}/items/{position}/pin", body)
        for body in ({}, {"pinned": "maybe"}, {"pinned": True, "kind": "context"})
    ]

    assert [(a.status_code, a.json()["field"]) for a in answers] == [
        (422, "pinned"),
        (422, "pinned"),
        (422, "kind"),
    ]
    assert Item.objects.get(session__sid=sid).pinned is False


# --- export and import -----------------------------------------------------------------------------


def test_export_and_import_keep_pins_and_who_said_a_bullet_when(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    when = "2023-05-08T13:56:00+02:00"
    positions = append(
        alice_api,
        sid,
        {"role": "user", "text": RULE, "name": "Ana", "occurred_at": when},
        {"role": "assistant", "text": ANSWER, "name": "Otto", "occurred_at": when},
    )
    for n in range(30):
        append(alice_api, sid, chatter(n))
    assert Item.objects.get(session__sid=sid, position=positions[1]).tier == "a"
    pin(alice_api, sid, positions[1])
    append(alice_api, sid, {"role": "assistant", "text": "Pinned while pending.", "pinned": True})
    exported = alice_api.get(f"/api/v1/sessions/{sid}/export").json()

    response = alice_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(exported))
    again = alice_api.get("/api/v1/sessions/copy/export").json()

    assert response.status_code == 201, response.content
    pinned = [(e["position"], e["pinned"]) for e in exported["archive"] + exported["pending"] if e["pinned"]]
    assert [p for p, _ in pinned] == [positions[1], positions[1] + 31]
    (bullet,) = [b for b in exported["bullets"] if b["pinned"]]
    assert (bullet["text"], bullet["name"], bullet["occurred_at"], bullet["protected"]) == (
        ANSWER,
        "Otto",
        when,
        True,
    )
    person = next(b for b in exported["bullets"] if b["text"] == RULE)
    assert (person["name"], person["occurred_at"], person["pinned"]) == ("Ana", when, False)
    for part in ("pending", "archive", "bullets"):
        assert again[part] == exported[part], part
    assert pinned_bullets(context(alice_api, "copy")) == [(ANSWER, True)]


def test_a_document_without_pins_or_bullet_speakers_imports(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    append(alice_api, sid, {"role": "user", "text": RULE, "name": "Ana", "pinned": True})
    for n in range(30):
        append(alice_api, sid, chatter(n))
    document = alice_api.get(f"/api/v1/sessions/{sid}/export").json()
    for entry in document["pending"] + document["archive"]:
        del entry["pinned"]
    for bullet in document["bullets"]:
        del bullet["pinned"], bullet["name"], bullet["occurred_at"]

    response = alice_api.post("/api/v1/sessions/import?id=old", raw=json.dumps(document))

    assert response.status_code == 201, response.content
    assert not Item.objects.filter(session__sid="old", pinned=True).exists()
    bullets = Bullet.objects.filter(session__sid="old")
    assert bullets.exists()
    assert {(b.pinned, b.name, b.occurred_at) for b in bullets} == {(False, "", None)}


@pytest.mark.parametrize(
    "part, field, value, words",
    [
        ("pending", "pinned", "yes", "must be true or false"),
        ("bullets", "pinned", 1, "must be true or false"),
        ("bullets", "name", "Eve\nuser: hi", "line breaks"),
        ("bullets", "occurred_at", "yesterday", "ISO 8601"),
    ],
)
def test_a_bad_pin_or_bullet_speaker_in_a_document_is_a_422_naming_its_path(
    alice_api, part, field, value, words
):
    sid = new_session(alice_api, x_budget=40, y_budget=200)
    for n in range(30):
        append(alice_api, sid, chatter(n))
    document = alice_api.get(f"/api/v1/sessions/{sid}/export").json()
    document[part][0][field] = value

    response = alice_api.post("/api/v1/sessions/import?id=bad", raw=json.dumps(document))

    assert response.status_code == 422, response.content
    assert response.json()["field"] == f"{part}[0].{field}"
    assert words in response.json()["detail"]


def test_a_document_pinning_past_the_cap_is_refused(alice_api, settings):
    settings.OTTO_MAX_PINS = 1
    sid = new_session(alice_api)
    append(alice_api, sid, chatter(1), chatter(2))
    document = alice_api.get(f"/api/v1/sessions/{sid}/export").json()
    for entry in document["pending"]:
        entry["pinned"] = True

    response = alice_api.post("/api/v1/sessions/import?id=many", raw=json.dumps(document))

    assert response.status_code == 422, response.content
    assert response.json()["field"] == "pending[1].pinned"
    assert "OTTO_MAX_PINS" in response.json()["detail"]


def test_a_session_with_its_own_protected_share_and_its_pins_imports_from_its_own_export(alice_api):
    assert (
        alice_api.post(
            "/api/v1/sessions", {"id": "wide", "x_budget": 40, "y_budget": 200, "protected_share": 1.0}
        ).status_code
        == 201
    )
    # Pins past the default share (100 of 200 tokens), within this session's own (200).
    for n in range(8):
        append(
            alice_api,
            "wide",
            {
                "role": "assistant",
                "text": f"Pinned fact {n}: the key for rack {n} is in drawer {n}.",
                "pinned": True,
            },
        )
    exported = alice_api.get("/api/v1/sessions/wide/export").json()

    response = alice_api.post("/api/v1/sessions/import?id=wide-copy", raw=json.dumps(exported))

    assert exported["session"]["protected_share"] == 1.0
    assert response.status_code == 201, response.content
    assert response.json()["protected_share"] == 1.0
    assert Item.objects.filter(session__sid="wide-copy", pinned=True).count() == 8


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda b, other: b.update(hash_refs=[b["hash_refs"][0], other]), "one protected history turn"),
        (lambda b, other: b.update(protected=False), "one protected history turn"),
    ],
)
def test_a_pinned_bullet_in_a_document_must_be_one_protected_turn(alice_api, change, words):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    for n in range(30):
        append(alice_api, sid, chatter(n))
    archived = Item.objects.filter(session__sid=sid, tier="a").order_by("position").first()
    pin(alice_api, sid, archived.position)
    document = alice_api.get(f"/api/v1/sessions/{sid}/export").json()
    n, bullet = next((n, b) for n, b in enumerate(document["bullets"]) if b["pinned"])
    change(bullet, document["chunks"][-1]["hash"])

    response = alice_api.post("/api/v1/sessions/import?id=forged", raw=json.dumps(document))

    assert response.status_code == 422, response.content
    assert response.json()["field"] == f"bullets[{n}].pinned"
    assert words in response.json()["detail"]
    assert not Session.objects.filter(sid="forged").exists()


def test_a_pinned_bullet_of_a_turn_the_document_does_not_pin_is_refused(alice_api):
    sid = new_session(alice_api, x_budget=40, y_budget=300)
    for n in range(30):
        append(alice_api, sid, chatter(n))
    archived = Item.objects.filter(session__sid=sid, tier="a").order_by("position").first()
    pin(alice_api, sid, archived.position)
    document = alice_api.get(f"/api/v1/sessions/{sid}/export").json()
    for entry in document["archive"] + document["pending"]:
        entry["pinned"] = False

    response = alice_api.post("/api/v1/sessions/import?id=forged", raw=json.dumps(document))

    assert response.status_code == 422, response.content
    assert "pins a turn the document does not pin" in response.json()["detail"]
