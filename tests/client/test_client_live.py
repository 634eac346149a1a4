"""ottoweb_client against a live production server: every area it covers, and one refusal per code."""

from __future__ import annotations

import pytest
from ottoweb_client import Ottoweb, OttowebError

from tests.live import Instance, free_port

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the client, not the database, is tested


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # A small body limit and one queued job per user, so 413 and 429 are cheap to reach; no worker,
    # so a queued job stays queued.
    instance = Instance(
        tmp_path_factory.mktemp("client"),
        OTTO_COMPACTION="inline",
        OTTO_MAX_BODY_BYTES="200000",
        OTTO_MAX_QUEUED_JOBS="1",
    )
    instance.start_web(production=True)
    yield instance
    instance.close()


@pytest.fixture(scope="module")
def client(server) -> Ottoweb:
    return Ottoweb(server.url, server.token)


def test_client_sessions_items_context_recall_and_jobs(client):
    created = client.create_session("trip", title="Lisbon trip", x_budget=60, y_budget=200)
    client.append("trip", "user", "We land in Lisbon at 7:40 on Friday.", name="ada")
    batch = client.append_batch(
        "trip",
        [{"role": "assistant", "text": f"Day {n}: tram 28 to Alfama, then the castle."} for n in range(30)],
    )
    context = client.context("trip")
    found = client.recall("trip", "When do we land in Lisbon?")
    removed = client.compact("trip")
    detail = client.get_session("trip")
    listed = client.list_sessions(q="lisbon")
    exported = client.export_session("trip")
    client.delete_session("trip")
    imported = client.import_session(exported, id="trip-copy")
    job = client.get_job(client.reembed("trip-copy"))

    assert created["id"] == "trip"
    assert [i["position"] for i in batch["items"]] == list(range(1, 31))
    assert context["tokens"]["total"] <= 260 + context["tokens"]["protected"]
    hits = [t["text"] for p in found["results"]["history"] for t in p["turns"] if t["hit"]]
    assert hits[0] == "We land in Lisbon at 7:40 on Friday."
    assert removed >= 0
    assert detail["turns"] == 31
    assert [s["id"] for s in listed["items"]] == ["trip"]
    assert imported["turns"] == 31
    assert (job["kind"], job["status"], job["session"]) == ("reembed", "queued", "trip-copy")


def test_client_notes_and_lessons(client):
    note = client.remember("Ada is vegetarian.", key="diet", app_name="trips", domain="example.com")
    found = client.recall_notes("what does Ada eat", app_name="trips", domain="example.com")
    scopes = client.list_scopes()
    listed = client.list_notes(app_name="trips", domain="example.com")
    read = client.get_note(note["id"])
    record = client.record_error("maps.route", "HTTP 429 from the routing API", "wait 2 s and retry once")
    assert record["stored"]  # narrows the answer to the record (StoredRecordOut)
    not_stored = client.record_error("maps.route", "timeout", "gave up", outcome="abandoned")
    related = client.related_errors("maps.route", "routing API answered 429 Too Many Requests")
    edited = client.update_error(record["id"], "wait 5 s and retry once")
    errors = client.list_errors(tool="maps.route")
    client.delete_error(record["id"])
    client.delete_note(note["id"])
    deleted = client.delete_scope(conversation_id="nothing-here")

    assert note["projectKey"] == "app:trips@example.com"
    assert [n["content"] for n in found["items"]] == ["Ada is vegetarian."]
    assert [s["projectKey"] for s in scopes["items"]] == ["app:trips@example.com"]
    assert listed["count"] == 1
    assert read["key"] == "diet"
    assert not not_stored["stored"] and not_stored == {"stored": False, "reason": not_stored["reason"]}
    assert [r["id"] for r in related["related_errors"]] == [record["id"]]
    assert edited["action"] == "wait 5 s and retry once"
    assert errors["count"] == 1
    assert client.list_errors(tool="maps.route")["count"] == 0
    assert client.list_notes()["count"] == 0
    assert deleted["deleted"] == 0


def refusal(call) -> OttowebError:  # type: ignore[no-untyped-def]
    with pytest.raises(OttowebError) as raised:
        call()
    return raised.value


def test_client_pins_and_unpins_a_turn(client):
    client.create_session("pins", x_budget=40, y_budget=200)
    first = client.append("pins", "assistant", "The gate code is 4417.", pinned=True)
    client.append_batch(
        "pins",
        [{"role": "assistant", "text": f"Day {n}: tram 28 to Alfama, then the castle."} for n in range(30)],
    )
    pinned = client.context("pins")["bullets"]
    unpinned = client.pin("pins", first["position"], pinned=False)
    again = client.pin("pins", first["position"])

    assert [(b["text"], b["pinned"]) for b in pinned if b["pinned"]] == [("The gate code is 4417.", True)]
    assert (unpinned["position"], unpinned["pinned"], again["pinned"]) == (first["position"], False, True)
    assert refusal(lambda: client.pin("pins", 999)).code == "not_found"


def test_client_raises_one_error_type_with_code_and_detail_for_every_refusal(server):
    client = Ottoweb(server.url, server.manage("create_token", "erin").strip())  # a job queue of her own
    client.create_session("taken")
    client.reembed("taken")  # the one job allowed to wait (no worker runs it)
    client.create_session("jobs")
    client.create_session("small", y_budget=100)  # pins may hold 50 tokens

    errors = {
        "unauthorized": refusal(lambda: Ottoweb(server.url, "otto_not-a-token").list_sessions()),
        "not_found": refusal(lambda: client.get_session("nobody")),
        "conflict": refusal(lambda: client.create_session("taken")),
        "invalid": refusal(lambda: client.append("taken", "user", "   ")),
        "too_large": refusal(lambda: client.append("taken", "user", "x" * 300_000)),
        "too_many_jobs": refusal(lambda: client.reembed("jobs")),
        "too_many_pins": refusal(lambda: client.append("small", "user", "Keep this. " * 30, pinned=True)),
        "unreachable": refusal(lambda: Ottoweb(f"http://127.0.0.1:{free_port()}", "t").list_sessions()),
    }

    assert {code: e.code for code, e in errors.items()} == {code: code for code in errors}
    assert [errors[c].status for c in errors] == [401, 404, 409, 422, 413, 429, 409, 0]
    assert errors["not_found"].detail == "no session 'nobody'"
    assert errors["conflict"].detail == "session id 'taken' is taken"
    assert errors["invalid"].field == "text"
    assert errors["too_large"].detail == "request body is larger than the server accepts"
    assert errors["too_many_jobs"].retry_after == 30  # the server's Retry-After, for a backoff
    assert {e.retry_after for c, e in errors.items() if c != "too_many_jobs"} == {None}
    assert all(e.detail for e in errors.values())
