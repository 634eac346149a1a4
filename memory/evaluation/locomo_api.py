"""LoCoMo through the public HTTP API only, as an agent would use it (`eval_memory --via-api`).

A conversation becomes a session: one batch append per LoCoMo sitting, each turn with its speaker
as `name` (or its own role and name where the data gives them: locomo.role_of, name_of), the
sitting's (or the turn's own) time as `occurred_at` and its dialogue id in `meta`; then the eval waits
for the compaction jobs the appends started and for the worker's vectors (`GET /sessions/{id}`'s
`unembedded`), and asks every question through `POST …/recall`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from memory.evaluation import locomo
from memory.evaluation.processes import WebServer, WorkerStuck

# The worker compacts and embeds a whole conversation (≈ 700 turns) in well under this.
SETTLE_TIMEOUT = 900.0


@dataclass(frozen=True, slots=True)
class Answer:
    returned: frozenset[int]
    hits: tuple[str, ...]
    tokens: int
    latency_ms: float
    # The hits' positions, best first (how a question about a changed fact is judged: the current
    # value before the superseded one).
    order: tuple[int, ...] = ()


def replay(
    server: WebServer,
    conv: locomo.Conversation,
    *,
    sid: str,
    x_budget: int,
    y_budget: int,
    after_sitting: Callable[[int], None] | None = None,
) -> tuple[dict[str, int], int]:
    """Append the conversation; return each dialogue id's position and the compaction generations.

    `after_sitting(n)` is called once sitting n is appended and the worker has settled it."""
    server.expect(
        201,
        "POST",
        "/api/v1/sessions",
        {"id": sid, "title": conv.sample_id, "x_budget": x_budget, "y_budget": y_budget},
    )
    position_of: dict[str, int] = {}
    jobs: set[str] = set()
    for number, sitting in groupby(conv.turns, key=lambda t: t.session):
        turns = list(sitting)
        items = [
            {
                "role": locomo.role_of(conv, turn),
                "text": turn.text,
                "name": locomo.name_of(turn),
                "meta": {"dia_id": turn.dia_id},
                # Both LoCoMo speakers are people; protecting one side would keep half the
                # conversation verbatim and measure nothing about compaction.
                "protected": False,
                **({"occurred_at": turn.occurred_at.isoformat()} if turn.occurred_at else {}),
            }
            for turn in turns
        ]
        answer = server.expect(
            201, "POST", f"/api/v1/sessions/{sid}/items/batch", {"items": items}, keep_alive=True
        )
        for turn, appended in zip(turns, answer["items"], strict=True):
            position_of[turn.dia_id] = appended["position"]
            if appended["compaction"]:
                jobs.add(appended["compaction"]["job_id"])
        if after_sitting is not None:
            settle(server, sid, jobs)
            after_sitting(number)
    settle(server, sid, jobs)
    session = server.expect(200, "GET", f"/api/v1/sessions/{sid}")
    return position_of, int(session["generation"])


def settle(server: WebServer, sid: str, jobs: set[str], *, timeout: float = SETTLE_TIMEOUT) -> None:
    """Wait until every job is done and every turn of the session has its vector."""
    deadline = time.monotonic() + timeout
    pending = set(jobs)
    while True:
        for job_id in sorted(pending):
            job = server.expect(200, "GET", f"/api/v1/jobs/{job_id}")
            if job["status"] == "failed":
                raise WorkerStuck(f"job {job_id} of session {sid} failed: {job['error']}")
            if job["status"] == "done":
                pending.discard(job_id)
        unembedded = server.expect(200, "GET", f"/api/v1/sessions/{sid}")["unembedded"]
        if not pending and unembedded == 0:
            return
        if time.monotonic() > deadline:
            raise WorkerStuck(
                f"session {sid}: {len(pending)} job(s) unfinished and {unembedded} turn(s) without a "
                f"vector after {timeout:.0f} s"
            )
        time.sleep(0.2)


def asker(server: WebServer, sid: str, *, match: str, max_tokens: int) -> Callable[[str], Answer]:
    """A function asking one question of the session over HTTP."""

    def ask(question: str) -> Answer:
        started = time.perf_counter()
        answer = server.expect(
            200,
            "POST",
            f"/api/v1/sessions/{sid}/recall",
            {"query": question, "kind": "history", "match": match, "max_tokens": max_tokens},
            keep_alive=True,
        )
        latency = (time.perf_counter() - started) * 1000
        turns = [t for p in answer["results"]["history"] for t in p["turns"]]
        return Answer(
            returned=frozenset(t["position"] for t in turns),
            hits=tuple(t["text"] for t in turns if t["hit"]),
            tokens=int(answer["tokens"]),
            latency_ms=latency,
            order=tuple(t["position"] for t in turns if t["hit"]),
        )

    return ask
