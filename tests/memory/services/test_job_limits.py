"""Jobs are fair and bounded: one queued job per session and kind, a per-user cap, no dead job."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory import services
from memory.models import Job


def test_reembed_requests_on_one_session_answer_one_queued_job(alice_api):
    alice_api.post("/api/v1/sessions", {"id": "s"})

    answers = [alice_api.post("/api/v1/sessions/s/reembed", {}) for _ in range(300)]

    assert {a.status_code for a in answers} == {202}
    assert len({a.json()["job_id"] for a in answers}) == 1
    assert list(Job.objects.values_list("kind", "status")) == [("reembed", "queued")]


@pytest.mark.parametrize("model", ["", "  "])
def test_a_reembed_naming_an_empty_model_is_refused(alice_api, model):
    alice_api.post("/api/v1/sessions", {"id": "s"})

    response = alice_api.post("/api/v1/sessions/s/reembed", {"model": model})

    assert response.status_code == 422
    assert response.json() == {
        "detail": "model must not be empty: leave it out to re-embed with the server's model "
        "(OTTO_EMBEDDING_MODEL)",
        "code": "invalid",
        "field": "model",
    }
    assert Job.objects.count() == 0


def test_queued_jobs_beyond_the_user_cap_answer_429_with_retry_after(alice_api, bob_api, settings):
    settings.OTTO_MAX_QUEUED_JOBS = 3
    for n in range(4):
        alice_api.post("/api/v1/sessions", {"id": f"s{n}"})
    bob_api.post("/api/v1/sessions", {"id": "b"})

    accepted = [alice_api.post(f"/api/v1/sessions/s{n}/reembed", {}).status_code for n in range(3)]
    refused = alice_api.post("/api/v1/sessions/s3/reembed", {})
    bobs = bob_api.post("/api/v1/sessions/b/reembed", {})

    assert accepted == [202, 202, 202]
    assert refused.status_code == 429
    assert refused["Retry-After"] == "30"
    assert refused.json()["code"] == "too_many_jobs"
    assert "the limit is 3" in refused.json()["detail"]
    assert bobs.status_code == 202
    assert Job.objects.filter(session__sid="s3").count() == 0


def test_an_overflow_after_a_dead_queued_job_enqueues_a_fresh_one(alice):
    session = services.create_session(user=alice, sid="w")
    dead = services.enqueue_compaction(session=session)
    Job.objects.filter(pk=dead.pk).update(created_at=timezone.now() - timedelta(minutes=11))

    fresh = services.enqueue_compaction(session=session)
    again = services.enqueue_compaction(session=session)
    dead.refresh_from_db()

    assert fresh.id != dead.id
    assert again.id == fresh.id
    assert dead.status == "failed"
    assert dead.error == f"abandoned: no worker finished it within 0:10:00; job {fresh.id} replaces it"
