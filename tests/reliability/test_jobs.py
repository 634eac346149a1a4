"""No job is ever lost: a real worker whose claim, load or finish meets a held write lock."""

from __future__ import annotations

import os
import threading
import time
from contextlib import closing

import pytest

from tests.live import Instance, postgres_connection
from tests.memory.services.test_worker import turn
from tests.stubs import SlowChat, StubServer

pytestmark = pytest.mark.slow


def append_until_compaction(instance: Instance, start: int = 0, *, sid: str) -> tuple[str, int]:
    n = start
    while True:
        status, body = instance.request("POST", f"/api/v1/sessions/{sid}/items", turn(n))
        assert status == 201, body
        n += 1
        if body["compaction"]:
            return body["compaction"]["job_id"], n


class WriteLock:
    """Another process's long writer: holds the database's write lock (SQLite) or the session's
    and jobs' rows (PostgreSQL) for `seconds`, in a thread of the test."""

    def __init__(self, instance: Instance, seconds: float) -> None:
        self.instance, self.seconds = instance, seconds
        self.taken = threading.Event()
        # The hold's seconds count from here: set once the workers are up (their resend of unfinished
        # jobs then has met the lock too).
        self.counting = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        if self.instance.database is None:
            from pysqlite3 import dbapi2 as sqlite3  # type: ignore[import-untyped]

            path = os.path.join(self.instance.env["OTTO_DATA_DIR"], "ottoweb.sqlite3")
            with closing(sqlite3.connect(path, isolation_level=None)) as connection:
                connection.execute("BEGIN IMMEDIATE")
                self.taken.set()
                self.counting.wait(120)
                time.sleep(self.seconds)
                connection.execute("ROLLBACK")
            return
        with postgres_connection(self.instance.database) as connection:
            connection.execute("SELECT 1 FROM memory_session FOR UPDATE")
            connection.execute("SELECT 1 FROM memory_job FOR UPDATE")
            self.taken.set()
            self.counting.wait(120)
            time.sleep(self.seconds)
            connection.rollback()

    def __enter__(self) -> WriteLock:
        self.thread.start()
        assert self.taken.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self.counting.set()
        self.thread.join()


def met_the_lock(instance: Instance) -> bool:
    """Whether a worker's write failed on the held lock and was tried again (SQLite; on PostgreSQL
    the rows held make it wait instead, which no log shows)."""
    logs = instance.data_dir.glob("worker*.log")
    return instance.database is not None or any("database is locked" in log.read_text() for log in logs)


def wait_for_log(instance: Instance, words: str) -> None:
    """Until some worker's log holds `words` (a task received, the worker ready)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        logs = [(instance.data_dir / f"worker{n}.log") for n in range(len(instance.workers))]
        if any(log.exists() and words in log.read_text() for log in logs):
            return
        time.sleep(0.1)
    raise AssertionError(f"no worker logged {words!r} in 120 s")


class GatedChat(SlowChat):
    """A summariser that answers once the test opens its gate."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def __call__(self, path: str, body: dict) -> tuple[int, dict]:
        self.started.set()
        self.gate.wait(120)
        return super().__call__(path, body)


# SQLite's writers wait 3 s for a lock here (10 by default): a hold of 10 s outlasts several waits.
BUSY_SECONDS, HOLD_SECONDS = "3", 10


def test_a_job_whose_claim_meets_a_held_write_lock_completes_once_it_is_released(tmp_path):
    chat = GatedChat()
    with StubServer(chat) as stub:
        instance = Instance(
            tmp_path / "data",
            OTTO_COMPACTION="job",
            OTTO_SUMMARIZER=f"openai:{stub.url}/v1#stub",
            OTTO_SQLITE_BUSY_SECONDS=BUSY_SECONDS,
        )
        try:
            instance.start_web()
            instance.start_worker()
            for sid in ("a", "w"):
                instance.request("POST", "/api/v1/sessions", {"id": sid, "x_budget": 60, "y_budget": 200})
            # The only worker is busy with session a's compaction, its summariser held at the gate …
            busy_id, _ = append_until_compaction(instance, sid="a")
            assert chat.started.wait(60)
            # … while session w overflows: its job waits for the worker.
            job_id, sent = append_until_compaction(instance, sid="w")
            # Another writer takes the lock, and the gate opens: a's commit, then w's claim, meet
            # "database is locked" for longer than SQLite waits.
            with WriteLock(instance, HOLD_SECONDS) as lock:
                lock.counting.set()
                chat.gate.set()
            busy = instance.wait_for_job(busy_id, timeout=120)
            first = instance.wait_for_job(job_id, timeout=120)
            # The session compacts on: the next overflow gets a job of its own, which runs too.
            second_id, _ = append_until_compaction(instance, start=sent, sid="w")
            second = instance.wait_for_job(second_id, timeout=120)
            _, session = instance.request("GET", "/api/v1/sessions/w")
            locked = met_the_lock(instance)
        finally:
            instance.close()

    assert locked
    assert (busy["status"], busy["error"]) == ("done", "")
    assert (first["status"], first["error"]) == ("done", "")
    assert second_id != job_id
    assert (second["status"], second["error"]) == ("done", "")
    assert session["generation"] >= 2


def test_vectors_whose_write_meets_a_held_write_lock_are_written_once_it_is_released(tmp_path):
    instance = Instance(
        tmp_path / "data",
        OTTO_COMPACTION="job",
        OTTO_EMBEDDING_MODEL="wordllama",
        OTTO_SQLITE_BUSY_SECONDS=BUSY_SECONDS,
    )
    try:
        instance.start_web()
        instance.start_worker()
        # Ready before the turns come: on a loaded machine a worker still starting took the task
        # after the hold below had ended, and met no lock.
        wait_for_log(instance, " ready.")
        instance.request("POST", "/api/v1/sessions", {"id": "v"})
        outputs = [{"role": "tool", "kind": "context", "text": f"build {n}: 3 warnings"} for n in range(40)]
        status, _ = instance.request("POST", "/api/v1/sessions/v/items/batch", {"items": outputs})
        assert status == 201
        # The worker's embedding task (sent 2 s ahead) meets the lock for longer than SQLite waits.
        with WriteLock(instance, HOLD_SECONDS) as lock:
            lock.counting.set()
        deadline = time.monotonic() + 120
        counts: list[tuple] = []
        while time.monotonic() < deadline:
            counts = instance.read(
                "SELECT (SELECT count(*) FROM memory_item), (SELECT count(*) FROM memory_itemvector)"
            )
            if counts[0][0] == counts[0][1]:
                break
            time.sleep(0.5)
        locked = met_the_lock(instance)
    finally:
        instance.close()

    assert locked
    assert counts == [(40, 40)]


def test_one_users_queued_reembeds_delay_another_users_compaction_by_at_most_one_job(tmp_path):
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job", OTTO_EMBEDDING_MODEL="wordllama")
    bob = instance.manage("create_token", "bob").strip()
    try:
        instance.start_web()
        for n in range(8):
            instance.request("POST", "/api/v1/sessions", {"id": f"a{n}"})
            turns = [
                {"role": "assistant", "text": f"note {n}.{k}: shard {k % 7} is green"} for k in range(400)
            ]
            instance.request("POST", f"/api/v1/sessions/a{n}/items/batch", {"items": turns})
        alice_token, instance.token = instance.token, bob
        instance.request("POST", "/api/v1/sessions", {"id": "b", "x_budget": 60, "y_budget": 200})
        instance.token = alice_token
        # Alice's eight re-embeddings are in the queue before Bob's session overflows.
        for n in range(8):
            status, _ = instance.request("POST", f"/api/v1/sessions/a{n}/reembed", {})
            assert status == 202
        instance.token = bob
        job_id, _ = append_until_compaction(instance, sid="b")
        instance.start_worker()
        bobs = instance.wait_for_job(job_id, timeout=300)
        instance.token = alice_token
        before = instance.read(
            "SELECT count(*) FROM memory_job WHERE kind = 'reembed' AND finished_at IS NOT NULL "
            "AND finished_at < (SELECT finished_at FROM memory_job WHERE id = ?)",
            job_id,
        )
    finally:
        instance.close()

    assert bobs["status"] == "done"
    assert before[0][0] <= 1
