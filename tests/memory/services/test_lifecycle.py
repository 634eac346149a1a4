"""Memory actions (docs/decisions.md, "Memory actions"), export/import, and jobs run in-process by the worker's code."""

from __future__ import annotations

import copy
import json

import pytest

from memory import services
from memory.models import Bullet, Chunk, Item, ItemVector, Job, Session
from memory.services import NewItem
from tests.conftest import embedded_turns_once
from tests.memory.engine.conftest import synthetic_turns
from tests.memory.storage.indexes import fts_count

pytestmark = pytest.mark.django_db


def fts_rows(session) -> int:
    return fts_count(session.pk, "history")


def stores(session) -> dict[str, int]:
    return {
        "items": Item.objects.filter(session=session).count(),
        "chunks": Chunk.objects.filter(session=session).count(),
        "vectors": ItemVector.objects.filter(session=session).count(),
        "fts": fts_rows(session),
        "live_bullets": Bullet.objects.filter(session=session, superseded=False).count(),
        "all_bullets": Bullet.objects.filter(session=session).count(),
    }


@pytest.fixture(scope="module")
def filled_pk(module_owner, django_db_blocker) -> int:
    """120 turns, compacted, embedded, built once for the module."""
    return embedded_turns_once(
        django_db_blocker, module_owner.user, "life", synthetic_turns(120, seed=4), x_budget=150, y_budget=450
    )


@pytest.fixture
def filled(filled_pk) -> Session:
    """The module's session read afresh: no test sees what another did to the object."""
    return Session.objects.get(pk=filled_pk)


@pytest.fixture
def owner_api(module_owner):
    """The API as the owner of `filled`."""
    return module_owner.api


def test_compact_archives_raw_items_and_keeps_every_store(owner_api, filled):
    before = stores(filled)
    pending = Item.objects.filter(session=filled).pending().count()

    answer = owner_api.post("/api/v1/sessions/life/memory", {"action": "compact"}).json()
    after = stores(filled)

    assert answer == {"removed": pending}
    assert Item.objects.filter(session=filled).pending().count() == 0
    # Seed 002: the store of record is untouched by compaction; only the summary moves on.
    assert {k: after[k] for k in ("items", "chunks", "vectors", "fts")} == {
        k: before[k] for k in ("items", "chunks", "vectors", "fts")
    }
    assert after["all_bullets"] > before["all_bullets"]
    cited = {h for b in Bullet.objects.filter(session=filled, superseded=False) for h in b.hash_refs}
    assert set(Chunk.objects.filter(session=filled).values_list("hash", flat=True)) <= cited


def test_a_compact_beyond_the_inline_bound_is_queued_for_the_worker_which_compacts_everything(
    owner_api, filled, settings
):
    settings.OTTO_COMPACTION = "job"
    settings.OTTO_INLINE_COMPACT_TOKENS = 10
    pending = Item.objects.filter(session=filled).pending().count()
    generation = filled.tier_states.get(kind="history").generation

    answer = owner_api.post("/api/v1/sessions/life/memory", {"action": "compact"}).json()
    again = owner_api.post("/api/v1/sessions/life/memory", {"action": "compact"}).json()

    job = Job.objects.get(pk=answer["job_id"])
    assert answer == {"removed": 0, "job_id": job.id} == again  # one job, however often it is asked
    assert (job.kind, job.status, job.params) == ("compact", "queued", {"everything": True})
    assert Item.objects.filter(session=filled).pending().count() == pending  # not in the request
    services.run_compaction_job(job_id=job.id, worker="test:1")
    job.refresh_from_db()
    assert job.status == "done"
    assert Item.objects.filter(session=filled).pending().count() == 0
    assert filled.tier_states.get(kind="history").generation == generation + 1


def test_a_queued_due_compaction_takes_on_a_compact_asked_for_meanwhile(owner_api, filled, settings):
    settings.OTTO_COMPACTION = "job"
    settings.OTTO_INLINE_COMPACT_TOKENS = 10
    due = services.enqueue_compaction(session=filled)

    answer = owner_api.post("/api/v1/sessions/life/memory", {"action": "compact"}).json()

    assert answer["job_id"] == due.id
    assert Job.objects.get(pk=due.id).params == {"everything": True}


def test_summary_rebuilds_the_rolling_summary_without_losing_a_hash_ref(owner_api, filled):
    refs_before = {h for b in Bullet.objects.filter(session=filled, superseded=False) for h in b.hash_refs}
    generation = filled.tier_states.get(kind="history").generation
    pending = Item.objects.filter(session=filled).pending().count()

    answer = owner_api.post("/api/v1/sessions/life/memory", {"action": "summary"}).json()

    live = Bullet.objects.filter(session=filled, superseded=False)
    assert answer == {"count": live.count()}
    assert {h for b in live for h in b.hash_refs} == refs_before
    assert filled.tier_states.get(kind="history").generation == generation + 1
    assert Item.objects.filter(session=filled).pending().count() == pending


@pytest.mark.parametrize("mode", ["summary", "all"])
def test_reset_clears_what_the_seed_table_says(owner_api, filled, mode):
    services.append_items(
        session=filled, items=[NewItem(role="tool", text="evicted tool output", kind="context")]
    )
    live_before = Bullet.objects.filter(session=filled, superseded=False).count()

    answer = owner_api.post("/api/v1/sessions/life/memory", {"action": "reset", "mode": mode}).json()
    after = stores(filled)
    context = owner_api.get("/api/v1/sessions/life/context").json()

    assert answer == {"reset": mode}
    if mode == "summary":
        # The summary is kept with what it cites: each cited turn stays archived, indexed and
        # embedded (so the bullets still open and recall finds them); nothing else stays.
        cited = {h for b in Bullet.objects.filter(session=filled, superseded=False) for h in b.hash_refs}
        kept = Item.objects.filter(session=filled)
        assert set(kept.values_list("tier", "kind").distinct()) == {("a", "history")}
        assert set(kept.values_list("chunk__hash", flat=True)) == cited
        assert {k: after[k] for k in ("items", "chunks", "vectors", "fts")} == {
            "items": len(cited),
            "chunks": len(cited),
            "vectors": len(cited),
            "fts": len(cited),
        }
        assert after["live_bullets"] == after["all_bullets"] == live_before > 0
        assert len(context["bullets"]) == live_before
    else:
        assert {k: after[k] for k in ("items", "chunks", "vectors", "fts")} == {
            "items": 0,
            "chunks": 0,
            "vectors": 0,
            "fts": 0,
        }
        assert (
            after["all_bullets"],
            context["bullets"],
            filled.tier_states.get(kind="history").generation,
        ) == (0, [], 0)
    assert context["x"] == context["y_raw"] == []
    assert owner_api.get("/api/v1/sessions/life").json()["turns"] == 0
    # The session goes on: a new turn gets the next position, never a reused one.
    assert (
        owner_api.post("/api/v1/sessions/life/items", {"role": "user", "text": "again"}).json()["position"]
        == 120
    )


def test_remove_session_clears_every_store(owner_api, filled):
    pk = filled.pk
    assert owner_api.delete("/api/v1/sessions/life").status_code == 204
    assert not Session.objects.filter(pk=pk).exists()
    assert (
        Item.objects.filter(session_id=pk).count(),
        Chunk.objects.filter(session_id=pk).count(),
        ItemVector.objects.filter(session_id=pk).count(),
        Bullet.objects.filter(session_id=pk).count(),
    ) == (0, 0, 0, 0)
    assert fts_count(pk, "history") == 0


def test_memory_action_refuses_reset_without_a_mode(owner_api, filled):
    response = owner_api.post("/api/v1/sessions/life/memory", {"action": "reset"})

    assert (response.status_code, response.json()["field"]) == (422, "mode")
    assert Item.objects.filter(session=filled).count() == 120


@pytest.mark.parametrize("action", ["compact", "summary"])
def test_memory_action_refuses_a_mode_its_action_does_not_take(owner_api, filled, action):
    before = stores(filled)

    response = owner_api.post("/api/v1/sessions/life/memory", {"action": action, "mode": "all"})

    assert response.status_code == 422
    assert response.json() == {
        "detail": f"mode is reset's alone: {action} takes no mode",
        "code": "invalid",
        "field": "mode",
    }
    assert stores(filled) == before


def strip_volatile(document: dict) -> dict:
    doc = copy.deepcopy(document)
    for key in ("id", "created_at", "updated_at"):
        doc["session"].pop(key)
    return doc


def test_export_import_export_is_identical_and_recall_works_after_reembed(
    owner_api, filled, django_capture_on_commit_callbacks
):
    services.append_items(
        session=filled, items=[NewItem(role="tool", text="df: /var is 97% full", kind="context")]
    )
    exported = owner_api.get("/api/v1/sessions/life/export").json()

    with django_capture_on_commit_callbacks() as callbacks:
        created = owner_api.post("/api/v1/sessions/import?id=copy", raw=json.dumps(exported))
    job = Job.objects.get(session__sid="copy", kind="reembed")
    again = owner_api.get("/api/v1/sessions/copy/export").json()
    services.run_reembed_job(job_id=job.id, worker="test:1")
    answer = owner_api.post("/api/v1/sessions/copy/recall", {"query": "sourdough recipe"}).json()

    assert created.status_code == 201 and created.json()["id"] == "copy"
    assert len(callbacks) == 1  # the automatic re-embed, sent once the import committed
    assert "embeddings" not in json.dumps(exported) and "vector" not in json.dumps(exported)
    assert strip_volatile(again) == strip_volatile(exported)
    assert owner_api.get(f"/api/v1/jobs/{job.id}").json()["status"] == "done"
    assert answer["degraded"] is None and answer["results"]["history"]


def test_an_imported_session_ranks_by_keywords_until_reembedded(owner_api, filled):
    exported = owner_api.get("/api/v1/sessions/life/export").json()
    owner_api.post("/api/v1/sessions/import?id=copy2", raw=json.dumps(exported))

    assert ItemVector.objects.filter(session__sid="copy2").count() == 0
    answer = owner_api.post("/api/v1/sessions/copy2/recall", {"query": "sourdough recipe"}).json()
    # A read writes nothing: the turns wait for the re-embedding job (the worker's), and recall says
    # so while its words find them.
    assert "being re-embedded" in answer["degraded"]
    assert "sourdough" in json.dumps(answer["results"]["history"])


def bad_documents(exported: dict):
    doc = copy.deepcopy(exported)
    doc["chunks"][0]["hash"] = "0" * 64
    yield "hash mismatch", doc, "chunks[0].hash", "does not match the sha256 of text"
    doc = copy.deepcopy(exported)
    doc["pending"][1]["position"] = "three"
    yield "wrong type", doc, "pending[1].position", "must be an integer"
    doc = copy.deepcopy(exported)
    doc["bullets"][0]["hash_refs"].append("f" * 64)
    yield (
        "dangling ref",
        doc,
        f"bullets[0].hash_refs[{len(exported['bullets'][0]['hash_refs'])}]",
        "names no chunk",
    )
    doc = copy.deepcopy(exported)
    del doc["session"]["x_budget"]
    yield "missing field", doc, "session.x_budget", "is missing"
    doc = copy.deepcopy(exported)
    doc["format"] = "something.else"
    yield "wrong format", doc, "format", "must be"
    # A title and a workspace are held to POST /sessions' rules.
    doc = copy.deepcopy(exported)
    doc["session"]["title"] = "Q3 \u202eplan"
    yield "title override", doc, "session.title", "direction overrides (it holds U+202E)"
    doc = copy.deepcopy(exported)
    doc["session"]["workspace"] = "repo\nmain"
    yield (
        "workspace line break",
        doc,
        "session.workspace",
        "line breaks or direction overrides (it holds U+000A)",
    )
    doc = copy.deepcopy(exported)
    doc["session"]["title"] = "t" * 5000
    yield "title too long", doc, "session.title", "is 5,000 characters; the limit is 200"
    # A document that says something it does not hold is refused, not taken at its word.
    doc = copy.deepcopy(exported)
    doc["session"]["turns"] = 999
    yield "turns not held", doc, "session.turns", "is 999, but the document holds 120 history turns"
    doc = copy.deepcopy(exported)
    doc["session"]["created_at"] = "nope"
    yield "created_at not a time", doc, "session.created_at", "is not an ISO 8601 time"
    doc = copy.deepcopy(exported)
    doc["bullets"][0]["hash_refs"] = []
    yield "bullet citing nothing", doc, "bullets[0].hash_refs", "must cite at least one turn"
    doc = copy.deepcopy(exported)
    doc["chunks"][0]["text"] = "\u200b\ufeff"
    yield "invisible text", doc, "chunks[0].text", "must not be empty"


def test_bad_documents_are_refused_with_their_path_and_nothing_is_written(owner_api, filled):
    exported = owner_api.get("/api/v1/sessions/life/export").json()
    counts = (
        Session.objects.count(),
        Item.objects.count(),
        Chunk.objects.count(),
        Bullet.objects.count(),
        Job.objects.count(),
    )

    for name, doc, path, problem in bad_documents(exported):
        response = owner_api.post("/api/v1/sessions/import?id=bad", raw=json.dumps(doc))
        assert response.status_code == 422, name
        assert response.json()["field"] == path, name
        assert response.json()["detail"].startswith(f"{path}: ") and problem in response.json()["detail"], (
            name
        )
    truncated = owner_api.post("/api/v1/sessions/import?id=bad", raw=json.dumps(exported)[:5000])
    assert (truncated.status_code, truncated.json()["field"]) == (422, "$")
    assert (
        Session.objects.count(),
        Item.objects.count(),
        Chunk.objects.count(),
        Bullet.objects.count(),
        Job.objects.count(),
    ) == counts


def test_a_document_counting_fewer_turns_than_it_holds_imports_with_its_count(owner_api, filled):
    # A reset that keeps the summary counts turns from 0 again and keeps the turns the summary cites.
    exported = owner_api.get("/api/v1/sessions/life/export").json()
    exported["session"]["turns"] = 3

    response = owner_api.post("/api/v1/sessions/import?id=fewer", raw=json.dumps(exported))

    assert response.status_code == 201, response.content
    assert response.json()["turns"] == 3


def test_an_oversized_document_is_refused_before_it_is_read(owner_api, filled, settings):
    settings.OTTO_MAX_IMPORT_BYTES = 1024 * 1024
    huge = '{"format": "ottoweb.session", "padding": "' + "x" * (2 * 1024 * 1024) + '"}'

    response = owner_api.post("/api/v1/sessions/import?id=big", raw=huge)

    assert response.status_code == 422
    assert response.json()["field"] == "$"
    assert response.json()["detail"] == f"the document is {len(huge):,} bytes; the limit is 1,048,576"
    assert not Session.objects.filter(sid="big").exists()


def test_a_session_over_25_mb_exports_and_imports_back(alice_api, alice):
    # 27 tool outputs of 1,000,000 characters: a 27 MB document, over the import limit of before
    # (25 MB) and the largest request body (OTTO_MAX_BODY_BYTES, 32 MB) is not what bounds it.
    session = services.create_session(user=alice, sid="huge")
    outputs = [NewItem(role="tool", kind="context", text=f"output {n} " + "ok " * 333_330) for n in range(27)]
    for start in range(0, 27, 2):
        services.append_items(session=session, items=outputs[start : start + 2])

    exported = alice_api.get("/api/v1/sessions/huge/export")
    created = alice_api.post("/api/v1/sessions/import?id=copy", raw=exported.content)
    again = alice_api.get("/api/v1/sessions/copy/export")

    assert exported.status_code == 200 and len(exported.content) > 27_000_000
    assert created.status_code == 201, created.content[:500]
    assert strip_volatile(again.json()) == strip_volatile(exported.json())
    copied = Item.objects.filter(session__sid="copy").select_related("chunk").order_by("position")
    assert [i.chunk.text for i in copied] == [o.text for o in outputs]


def test_an_export_larger_than_an_import_accepts_is_refused_naming_the_limit(alice_api, alice, settings):
    session = services.create_session(user=alice, sid="life")
    services.append_items(session=session, items=[NewItem(role="user", text="x " * 1000)])
    settings.OTTO_MAX_IMPORT_BYTES = 1000

    response = alice_api.get("/api/v1/sessions/life/export")

    assert (response.status_code, response.json()["code"]) == (413, "too_large")
    assert "over the 1,000 an import accepts (OTTO_MAX_IMPORT_BYTES" in response.json()["detail"]


def test_import_refuses_a_taken_id(owner_api, filled):
    exported = owner_api.get("/api/v1/sessions/life/export").json()

    response = owner_api.post("/api/v1/sessions/import", raw=json.dumps(exported))

    assert (response.status_code, response.json()["code"]) == (409, "conflict")


def test_jobs_of_another_user_are_not_found(owner_api, bob_api, filled):
    job = owner_api.post("/api/v1/sessions/life/reembed", {}).json()["job_id"]

    assert owner_api.get(f"/api/v1/jobs/{job}").json()["status"] == "queued"
    assert bob_api.get(f"/api/v1/jobs/{job}").status_code == 404


def test_reembed_refuses_an_unknown_model(owner_api, filled):
    response = owner_api.post("/api/v1/sessions/life/reembed", {"model": "word2vec"})

    assert (response.status_code, response.json()["field"]) == (422, "model")
    assert Job.objects.count() == 0


def test_a_job_runs_once_and_a_second_delivery_does_nothing(filled):
    job = services.enqueue_reembed(session=filled)

    services.run_reembed_job(job_id=job.id, worker="test:1")
    first = ItemVector.objects.filter(session=filled).count()
    services.run_reembed_job(job_id=job.id, worker="test:2")

    job.refresh_from_db()
    assert (job.status, job.attempts, job.progress, job.total) == ("done", 1, 120, 120)
    assert ItemVector.objects.filter(session=filled).count() == first == 120


def test_two_jobs_of_one_session_never_run_at_once(filled):
    import os
    import socket

    running = services.enqueue_reembed(session=filled)
    Job.objects.filter(pk=running.pk).update(
        status="running",
        claimed_by=f"{socket.gethostname()}:{os.getpid()}",
        claimed_at=__import__("django.utils.timezone", fromlist=["now"]).now(),
    )
    second = services.enqueue_compaction(session=filled)

    with pytest.raises(services.JobBusy):
        services.claim_job(job_id=second.id, worker="test:2")
    assert Job.objects.get(pk=second.pk).status == "queued"


def test_a_running_job_of_a_dead_worker_is_taken_over(filled):
    job = services.enqueue_reembed(session=filled)
    # A pid that cannot be alive on this machine: its worker was killed.
    Job.objects.filter(pk=job.pk).update(
        status="running",
        claimed_by=f"{__import__('socket').gethostname()}:999999",
        claimed_at=__import__("django.utils.timezone", fromlist=["now"]).now(),
    )

    taken = services.claim_job(job_id=job.id, worker="test:3")

    assert taken is not None and taken.claimed_by == "test:3" and taken.attempts == 1


def test_a_recall_while_the_session_is_re_embedded_says_it_is_degraded(owner_api, filled, settings):
    settings.OTTO_COMPACTION = "job"  # no worker here: the job stays queued
    job = owner_api.post("/api/v1/sessions/life/reembed", {"model": "wordllama"}).json()["job_id"]
    # As the job does first: the new stamp, every old vector gone.
    filled.refresh_from_db()
    Session.objects.filter(pk=filled.pk).update(embedding_model="wordllama")
    ItemVector.objects.filter(session=filled).delete()

    answer = owner_api.post("/api/v1/sessions/life/recall", {"query": "sourdough recipe"}).json()

    assert f"being re-embedded (job {job})" in answer["degraded"]
    services.run_reembed_job(job_id=job, worker="test:1")
    again = owner_api.post("/api/v1/sessions/life/recall", {"query": "sourdough recipe"}).json()
    assert again["degraded"] is None


def test_reembed_refuses_a_fastembed_model_it_could_not_fetch_by_name(owner_api, filled):
    response = owner_api.post("/api/v1/sessions/life/reembed", {"model": "fastembed:acme/no-such-model"})

    assert (response.status_code, response.json()["field"]) == (422, "model")
    assert "fastembed knows no model 'acme/no-such-model'" in response.json()["detail"]
    assert Job.objects.count() == 0
    # A model fastembed lists is accepted (its download is the worker's business).
    assert (
        owner_api.post(
            "/api/v1/sessions/life/reembed", {"model": "fastembed:BAAI/bge-small-en-v1.5"}
        ).status_code
        == 202
    )
