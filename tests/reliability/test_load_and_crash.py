"""Concurrency and crash safety against the real web server and worker processes."""

from __future__ import annotations

import http.client
import os
import random
import threading
import time

import pytest

from memory.evaluation.loadgen import run_load
from tests.live import Instance

pytestmark = pytest.mark.slow
# The scale-out run (`make test-postgres`) runs two workers: the job claim keeps them apart.
WORKERS = int(os.environ.get("OTTO_TEST_WORKERS", "1"))

# Every item row has a distinct position; every archived item is cited by a live bullet; every
# live hash ref names a chunk. Then each session's texts in position order.
AUDIT = """
import json
from memory.models import Item, Bullet, Chunk, Session
out = {}
for s in Session.objects.all():
    rows = list(Item.objects.filter(session=s, kind="history").select_related("chunk").order_by("position"))
    live = {h for b in Bullet.objects.filter(session=s, superseded=False) for h in b.hash_refs}
    chunks = set(Chunk.objects.filter(session=s).values_list("hash", flat=True))
    out[s.sid] = {
        "texts": [r.chunk.text for r in rows],
        "duplicates": len(rows) - len({r.position for r in rows}),
        "unreachable": sum(r.tier == "a" and r.chunk.hash not in live for r in rows),
        "dangling": len(live - chunks),
    }
print(json.dumps(out))
"""


def audit(instance: Instance) -> dict:
    import json

    return json.loads(instance.manage("shell", "--no-imports", "-c", AUDIT).strip().splitlines()[-1])


def in_order(expected: list[str], stored: list[str]) -> bool:
    """Every acknowledged text is stored, and each client's texts keep their order."""
    if not set(expected) <= set(stored):
        return False
    index = {text: n for n, text in enumerate(stored)}
    by_client: dict[str, list[int]] = {}
    for text in expected:
        by_client.setdefault(text.split(" turn ")[0], []).append(index[text])
    return all(positions == sorted(positions) for positions in by_client.values())


def test_sixteen_clients_for_sixty_seconds_lose_nothing_and_see_no_5xx(tmp_path):
    seconds = float(os.environ.get("OTTO_LOAD_SECONDS", "60"))
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    try:
        instance.start_web()
        for _ in range(WORKERS):
            instance.start_worker()
        result = run_load(instance.url, instance.token, clients=16, sessions=8, seconds=seconds)
        # Let the worker finish what the load queued before auditing.
        time.sleep(2)
        stored = audit(instance)
    finally:
        instance.close()
    print("\nload:", result.summary())

    assert result.errors == []
    assert set(result.statuses) <= {200, 201}
    assert result.requests > 16
    for session, texts in result.acknowledged.items():
        assert in_order(texts, stored[session]["texts"]), session
        assert (
            stored[session]["duplicates"],
            stored[session]["unreachable"],
            stored[session]["dangling"],
        ) == (0, 0, 0)
        assert len(stored[session]["texts"]) == len(texts)


def test_sigkill_at_random_points_never_loses_an_acknowledged_append(tmp_path):
    rng = random.Random(int(os.environ.get("OTTO_CRASH_SEED", "20261130")))
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    acknowledged: list[str] = []
    instance.start_web()
    for _ in range(WORKERS):
        instance.start_worker()
    instance.request("POST", "/api/v1/sessions", {"id": "crash", "x_budget": 80, "y_budget": 250})
    try:
        for round_number in range(5):
            stop = threading.Event()

            def writer(round_number: int = round_number, stop: threading.Event = stop) -> None:
                n = 0
                while not stop.is_set():
                    text = f"round {round_number} turn {n}: the deploy of shard {n % 9} passed."
                    try:
                        status, _ = instance.request(
                            "POST",
                            "/api/v1/sessions/crash/items",
                            {"role": "assistant", "text": text},
                            timeout=5,
                        )
                    except (OSError, http.client.HTTPException):
                        return  # the kill cut the connection, or the answer halfway: not acknowledged
                    if status == 201:
                        acknowledged.append(text)
                    n += 1

            thread = threading.Thread(target=writer)
            thread.start()
            time.sleep(rng.uniform(0.5, 3.0))
            victim = rng.choice(["web", "worker", "both"])
            if victim in ("web", "both"):
                instance.kill_web()
            if victim in ("worker", "both"):
                instance.kill_workers()
            stop.set()
            thread.join(timeout=30)
            if instance.web is None:
                instance.start_web()
            if not instance.workers:
                for _ in range(WORKERS):
                    instance.start_worker()
        time.sleep(3)
        stored = audit(instance)["crash"]
    finally:
        instance.close()

    assert len(acknowledged) > 50
    assert in_order(acknowledged, stored["texts"])
    # A request cut by the kill may have committed without its answer arriving: at most one per round.
    assert len(stored["texts"]) - len(acknowledged) <= 5
    assert (stored["duplicates"], stored["unreachable"], stored["dangling"]) == (0, 0, 0)
