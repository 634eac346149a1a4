"""One user cannot stall another (issue 18, point 2): a real server and worker, two users.

User A sends the largest batch and the largest `/runs/fit` the server accepts, in a loop; user B's
appends and reads meanwhile all succeed, whole and in order. The latencies are `manage.py bench
--contention`'s to measure (docs/reliability.md); these tests assert behaviour only.
"""

from __future__ import annotations

import threading

import pytest

from tests.live import Instance
from tests.reliability.test_jobs import WriteLock

# One writer at a time is SQLite's property; PostgreSQL has row locks and no such stall.
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]

# The instance's limits: the largest accepted requests are built from them. The fit's are smaller
# than the defaults so the test stays short; the batch's are the defaults.
FIT_MESSAGES = 1_000
BODY_BYTES = 3 * 1024 * 1024
BATCH_ITEMS = 100
BATCH_BYTES = 2 * 1024 * 1024


def tool_transcript(steps: int, *, words: str) -> list[dict]:
    """A seed and `steps` tool steps: 2 + 2 × steps messages."""
    messages = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the flaky login test."},
    ]
    for n in range(steps):
        cid = f"c{n}"
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": cid, "content": f"result {n}: {words}"},
        ]
    return messages


def largest_batch(round_: int) -> dict:
    # 100 items of 20,000 bytes: 2,000,000 bytes of text, just inside both limits.
    return {
        "items": [
            {"role": "tool", "text": f"r{round_} i{n} " + "x" * (20_000 - 12)} for n in range(BATCH_ITEMS)
        ]
    }


def largest_fit(round_: int) -> dict:
    # FIT_MESSAGES messages of about 3 KB each, the body just inside BODY_BYTES.
    messages = tool_transcript((FIT_MESSAGES - 2) // 2, words=f"round {round_} " + "log line ok " * 470)
    return {"session": "a", "model": "openai:gpt-4", "messages": messages, "related_errors": False}


def contention_instance(tmp_path) -> Instance:
    return Instance(
        tmp_path / "data",
        OTTO_COMPACTION="job",
        OTTO_EMBEDDING_MODEL="wordllama",
        OTTO_MAX_FIT_MESSAGES=str(FIT_MESSAGES),
        OTTO_MAX_BODY_BYTES=str(BODY_BYTES),
        OTTO_MAX_BATCH_ITEMS=str(BATCH_ITEMS),
        OTTO_MAX_BATCH_BYTES=str(BATCH_BYTES),
    )


def test_one_users_largest_writes_never_stall_another_users_appends(tmp_path):
    instance = contention_instance(tmp_path)
    try:
        instance.start_web()
        instance.start_worker()
        bob = instance.manage("create_token", "bob").strip()
        instance.request("POST", "/api/v1/sessions", {"id": "a"})
        instance.request("POST", "/api/v1/sessions", {"id": "b"}, token=bob)
        # The requests are the largest accepted: one more item, or one more message, is a 413.
        assert (
            instance.request(
                "POST",
                "/api/v1/sessions/a/items/batch",
                {"items": [{"role": "user", "text": "x"}] * (BATCH_ITEMS + 1)},
            )[0]
            == 413
        )
        too_long = largest_fit(0)
        too_long["messages"] = too_long["messages"] + tool_transcript(1, words="one more")[2:]
        assert instance.request("POST", "/api/v1/runs/fit", too_long)[0] == 413

        stop = threading.Event()
        a_statuses: list[int] = []
        a_refusals: list[object] = []

        def send(make) -> None:  # type: ignore[no-untyped-def]
            round_ = 0
            while not stop.is_set():
                round_ += 1
                path = "/api/v1/runs/fit" if make is largest_fit else "/api/v1/sessions/a/items/batch"
                status, answer = instance.request("POST", path, make(round_), timeout=300)
                a_statuses.append(status)
                if status == 429:
                    a_refusals.append(answer)

        senders = [
            threading.Thread(target=send, args=(m,), daemon=True) for m in (largest_batch, largest_fit)
        ]
        for thread in senders:
            thread.start()
        b_answers: list[tuple[int, object]] = []
        b_reads: list[int] = []
        try:
            for n in range(30):
                b_answers.append(
                    instance.request(
                        "POST",
                        "/api/v1/sessions/b/items",
                        {"role": "user", "text": f"bob {n}"},
                        token=bob,
                        timeout=60,
                    )
                )
                b_reads.append(
                    instance.request("GET", "/api/v1/sessions/b/context", token=bob, timeout=60)[0]
                )
        finally:
            stop.set()
            for thread in senders:
                thread.join(timeout=600)

        assert [status for status, _ in b_answers] == [201] * 30
        assert [answer["position"] for _, answer in b_answers] == list(range(30))  # type: ignore[index]
        assert b_reads == [200] * 30
        # A was busy the whole time and never got a 503 either. Its own queue may fill (each fit
        # queues a job storing its evicted turns): then A, and only A, is told to wait.
        assert len(a_statuses) >= 2 and set(a_statuses) <= {200, 201, 429}, a_statuses
        assert {200, 201} <= set(a_statuses), a_statuses
        assert all(r["code"] == "too_many_jobs" for r in a_refusals), a_refusals  # type: ignore[index]
        texts = instance.read(
            "SELECT c.text FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            "JOIN memory_session s ON s.id = i.session_id WHERE s.sid = 'b' ORDER BY i.position"
        )
        assert [t for (t,) in texts] == [f"bob {n}" for n in range(30)]
    finally:
        instance.close()


def test_reads_never_wait_for_a_write_lock(tmp_path):
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    try:
        instance.start_web()
        instance.request("POST", "/api/v1/sessions", {"id": "b"})
        instance.request("POST", "/api/v1/sessions/b/items", {"role": "user", "text": "hello"})
        # A token never used: its first use is due to be recorded, the one write a read makes.
        fresh = instance.manage("create_token", "alice").strip()
        # Another writer holds the lock until the reads are done. A read that waited for it would
        # get no answer before SQLite's 10 s busy timeout, so 5 s without one is a wait.
        with WriteLock(instance, 0) as lock:
            answers = [
                instance.request("GET", path, token=fresh, timeout=5)
                for path in ("/api/v1/sessions/b/context", "/api/v1/sessions/b", "/api/v1/sessions")
            ]
            lock.counting.set()
        assert [status for status, _ in answers] == [200, 200, 200]
        assert answers[0][1]["x"][0]["text"] == "hello"  # type: ignore[index]
    finally:
        instance.close()


def test_every_evicted_turn_of_a_5000_message_fit_ends_with_a_vector(tmp_path):
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job", OTTO_EMBEDDING_MODEL="wordllama")
    try:
        instance.start_web()
        instance.start_worker()
        instance.request("POST", "/api/v1/sessions", {"id": "run"})
        messages = tool_transcript(2_499, words="build ok")
        assert len(messages) == 5_000

        status, body = instance.request(
            "POST",
            "/api/v1/runs/fit",
            {"session": "run", "model": "openai:gpt-4", "messages": messages},
            timeout=300,
        )

        assert status == 200, body
        assert body["evicted"] >= 4_990 and body["stored"] == body["evicted"]  # type: ignore[index]
        job = instance.wait_for_job(body["job_id"], timeout=900)  # type: ignore[index]
        assert (job["status"], job["error"]) == ("done", "")
        rows = instance.read(
            "SELECT count(*), count(v.item_id) FROM memory_item i "
            "JOIN memory_session s ON s.id = i.session_id "
            "LEFT JOIN memory_itemvector v ON v.item_id = i.id WHERE s.sid = 'run' AND i.kind = 'context'"
        )
        assert rows == [(body["stored"], body["stored"])]  # type: ignore[index]
        assert instance.read("SELECT count(*) FROM memory_jobpayload") == [(0,)]
    finally:
        instance.close()
