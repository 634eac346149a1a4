"""Issue 25: a burst of appends that arrives while a compaction is unfinished is compacted too.

A real worker in job mode, real SQLite (or PostgreSQL): once the worker is idle, every session's
bullets and Y raw fit in its Y budget and `GET /context` holds nothing back. Only the model
endpoints are stubs: an embedding endpoint that holds a compaction job's last step (its vectors)
while the test appends, and a summariser that appends a batch in every round of a job.
"""

from __future__ import annotations

import threading
import time

import pytest

from memory.engine.types import Bullet
from memory.evaluation import synthetic
from memory.services import MAX_ROUNDS, create_session, enqueue_compaction, run_compaction_job
from memory.storage import DjangoTierStore
from tests.live import Instance
from tests.memory.services.test_worker import turn
from tests.reliability.test_jobs import wait_for_log
from tests.stubs import SlowChat, StubServer, gemini_embeddings

X_BUDGET, Y_BUDGET = 800, 1800


def conversation(count: int, seed: int) -> list[dict]:
    """A person and an agent; the person's turns protected by default, as in the issue's replay."""
    return [{"role": role, "text": text} for role, text in synthetic.conversation(count, seed=seed)]


class HeldVectors:
    """Gemini's embedContent wire format. A call made while the first compaction job of session
    `sid` runs is that job's last step (a worker of concurrency 1 runs nothing else meanwhile):
    after its last round's look at Y, before it is marked done. It waits there until the test
    `release`s it."""

    def __init__(self) -> None:
        self.instance: Instance | None = None
        self.sid = ""
        self.holding = threading.Event()
        self.release = threading.Event()

    def __call__(self, path: str, body: dict) -> tuple[int, dict]:
        if self.sid and self.first_job()[1] == "running":
            self.holding.set()
            self.release.wait(15)  # well inside the client's 20 s timeout
        return gemini_embeddings(path, body)

    def first_job(self) -> tuple[str, str]:
        assert self.instance is not None
        rows = self.instance.read(
            "SELECT j.id, j.status FROM memory_job j JOIN memory_session s ON s.id = j.session_id "
            "WHERE s.sid = ? AND j.kind = 'compact' ORDER BY j.created_at LIMIT 1",
            self.sid,
        )
        return (str(rows[0][0]), str(rows[0][1])) if rows else ("", "")


def wait_until_idle(instance: Instance, sids: list[str], timeout: float = 90) -> None:
    """Until no job is queued or running and every turn of `sids` has its vector."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        unfinished = instance.read("SELECT count(*) FROM memory_job WHERE status IN ('queued', 'running')")
        unembedded = [instance.request("GET", f"/api/v1/sessions/{sid}")[1]["unembedded"] for sid in sids]
        if unfinished == [(0,)] and not any(unembedded):
            return
        time.sleep(0.3)
    raise AssertionError(f"the worker was not idle after {timeout} s")


def overflow_jobs(answer: dict) -> set[str]:
    items = answer["items"] if "items" in answer else [answer]
    return {i["compaction"]["job_id"] for i in items if i["compaction"]}


def replay_across_a_compaction(
    instance: Instance, vectors: HeldVectors, sid: str, turns: list[dict], *, batch: int
) -> tuple[str, set[str]]:
    """Append `turns`: one batch up to Y's first overflow, then — while that overflow's job is held
    after its last round — the rest (one by one with `batch` 1, else in batches). Return the first
    job and the jobs every later overflow answered."""
    head, rest = turns[:60], turns[60:]
    vectors.sid = sid
    status, answer = instance.request("POST", f"/api/v1/sessions/{sid}/items/batch", {"items": head})
    assert status == 201, answer
    (first,) = overflow_jobs(answer)
    # One batch, so the job is sent before the worker's own embedding task for these turns (due
    # 2 s later): the job's vectors step is what finds them without a vector.
    assert vectors.holding.wait(60), "the first compaction job never reached its vectors step"
    answered: set[str] = set()
    for start in range(0, len(rest), batch):
        chunk = rest[start : start + batch]
        if batch == 1:
            status, answer = instance.request("POST", f"/api/v1/sessions/{sid}/items", chunk[0])
        else:
            status, answer = instance.request("POST", f"/api/v1/sessions/{sid}/items/batch", {"items": chunk})
        assert status == 201, answer
        answered |= overflow_jobs(answer)
    vectors.release.set()
    return first, answered


@pytest.mark.slow
def test_a_burst_appended_while_a_compaction_finishes_is_compacted_once_the_worker_is_idle(tmp_path):
    vectors = HeldVectors()
    with StubServer(vectors) as stub:
        instance = Instance(
            tmp_path / "data",
            OTTO_COMPACTION="job",
            OTTO_EMBEDDING_MODEL="gemini:stub",
            GEMINI_API_KEY="stub-key",
            OTTO_GEMINI_BASE_URL=stub.url,
        )
        vectors.instance = instance
        try:
            instance.start_web()
            instance.start_worker()
            wait_for_log(instance, " ready.")
            replays = {}
            for sid, batch in (("single", 1), ("batches", 20)):
                instance.request(
                    "POST", "/api/v1/sessions", {"id": sid, "x_budget": X_BUDGET, "y_budget": Y_BUDGET}
                )
                vectors.holding.clear()
                vectors.release.clear()
                turns = conversation(260, seed=25 + batch)
                replays[sid] = (
                    len(turns),
                    *replay_across_a_compaction(instance, vectors, sid, turns, batch=batch),
                )
                wait_until_idle(instance, [sid])
            contexts = {sid: instance.request("GET", f"/api/v1/sessions/{sid}/context")[1] for sid in replays}
            sessions = {sid: instance.request("GET", f"/api/v1/sessions/{sid}")[1] for sid in replays}
        finally:
            instance.close()

    for sid, (sent, first, answered) in replays.items():
        context, session = contexts[sid], sessions[sid]
        # Every overflow of the burst answered the job that was finishing: nothing else queued one.
        assert answered == {first}, sid
        assert session["turns"] == sent, sid
        assert (sid, context["held_back"], context["tokens"]["held_back"]) == (sid, 0, 0)
        assert context["tokens"]["bullets"] + context["tokens"]["y_raw"] <= Y_BUDGET, (sid, context["tokens"])
        assert context["over_budget"] is False, sid
        assert session["generation"] >= 2, sid


class AppendingChat(SlowChat):
    """An OpenAI-compatible summariser that, once in each round of the session's first compaction
    job, appends a batch of turns before it answers: every round ends with Y over budget again, so
    the job runs out of rounds while the burst is still in Y."""

    def __init__(self) -> None:
        super().__init__()
        self.instance: Instance | None = None
        self.sent = 0
        self.answered: set[str] = set()
        self.rounds_fed: set[int] = set()
        self.lock = threading.Lock()

    def __call__(self, path: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.feed()
        return super().__call__(path, body)

    def feed(self) -> None:
        assert self.instance is not None
        rows = self.instance.read(
            "SELECT status, progress FROM memory_job WHERE kind = 'compact' ORDER BY created_at LIMIT 1"
        )
        status, progress = rows[0]
        if status != "running" or progress >= MAX_ROUNDS or progress in self.rounds_fed:
            return
        self.rounds_fed.add(progress)
        burst = [turn(n) for n in range(self.sent, self.sent + 60)]
        code, answer = self.instance.request("POST", "/api/v1/sessions/r/items/batch", {"items": burst})
        assert code == 201, answer
        self.sent += len(burst)
        self.answered |= overflow_jobs(answer)


@pytest.mark.slow
def test_a_compaction_that_runs_out_of_rounds_with_y_over_budget_queues_the_next(tmp_path):
    chat = AppendingChat()
    with StubServer(chat) as stub:
        instance = Instance(
            tmp_path / "data",
            OTTO_COMPACTION="job",
            OTTO_EMBEDDING_MODEL="wordllama",
            OTTO_SUMMARIZER=f"openai:{stub.url}/v1#stub",
        )
        chat.instance = instance
        try:
            instance.start_web()
            instance.request("POST", "/api/v1/sessions", {"id": "r", "x_budget": 200, "y_budget": 800})
            # Up to the first overflow before the worker starts: its first job is this one.
            with chat.lock:
                while not chat.answered:
                    status, answer = instance.request("POST", "/api/v1/sessions/r/items", turn(chat.sent))
                    assert status == 201, answer
                    chat.sent += 1
                    chat.answered |= overflow_jobs(answer)
            (first,) = chat.answered
            instance.start_worker()
            wait_until_idle(instance, [])
            jobs = instance.read(
                "SELECT id, status, progress FROM memory_job WHERE kind = 'compact' ORDER BY created_at"
            )
            _, context = instance.request("GET", "/api/v1/sessions/r/context")
            _, session = instance.request("GET", "/api/v1/sessions/r")
        finally:
            instance.close()

    assert jobs[0] == (first, "done", MAX_ROUNDS)
    # Every overflow answered the first job; the ones after it were queued by the worker.
    assert chat.answered == {first}
    assert len(jobs) >= 2 and all(status == "done" for _, status, _ in jobs)
    assert session["turns"] == chat.sent
    assert (context["held_back"], context["tokens"]["held_back"]) == (0, 0)
    assert context["tokens"]["bullets"] + context["tokens"]["y_raw"] <= 800


@pytest.mark.django_db
def test_a_compaction_leaving_y_over_budget_only_with_protected_bullets_queues_nothing(alice):
    session = create_session(user=alice, sid="p", x_budget=X_BUDGET, y_budget=Y_BUDGET)
    # Y holds nothing but a person's verbatim turns, over budget: nothing a compaction could shrink.
    words = [f"request {n}: keep the staging replica warm until the audit closes." for n in range(200)]
    protected = Bullet(
        text=" ".join(words),
        hash_refs=("0" * 64,),
        generation=1,
        tokens=Y_BUDGET + 200,
        first_position=0,
        protected=True,
        role="user",
    )
    DjangoTierStore(session).commit_compaction(
        "history", base_generation=0, archived_positions=[], bullets=[protected]
    )
    job = enqueue_compaction(session=session)

    run_compaction_job(job_id=job.id, worker="test:1")

    jobs = list(session.jobs.filter(kind="compact").values_list("id", "status"))
    assert jobs == [(job.id, "done")]
