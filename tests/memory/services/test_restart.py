"""A real server process, SIGKILLed mid-stream and started again, resumes exactly."""

from __future__ import annotations

import threading

import pytest

from tests.live import Instance

pytestmark = pytest.mark.slow


@pytest.fixture
def instance(tmp_path):
    inst = Instance(tmp_path / "data")
    yield inst
    inst.close()


def turn(n: int) -> dict:
    role = "user" if n % 3 == 0 else "assistant"
    return {"role": role, "text": f"Turn {n}: the team looked at item {n * 13 % 97} and decided step {n}."}


def all_texts(context: dict) -> list[str]:
    return [t["text"] for t in context["y_raw"] + context["x"]]


def test_restart_after_sigkill_resumes_the_same_tiers(instance):
    instance.start_web()
    assert (
        instance.request("POST", "/api/v1/sessions", {"id": "r", "x_budget": 60, "y_budget": 200})[0] == 201
    )
    for n in range(80):
        assert instance.request("POST", "/api/v1/sessions/r/items", turn(n))[0] == 201
    _, before = instance.request("GET", "/api/v1/sessions/r/context")
    _, session_before = instance.request("GET", "/api/v1/sessions/r")

    instance.kill_web()
    instance.start_web()
    _, after = instance.request("GET", "/api/v1/sessions/r/context")
    _, session_after = instance.request("GET", "/api/v1/sessions/r")

    assert session_before["generation"] >= 3
    assert after == before
    assert session_after["generation"] == session_before["generation"]


def test_sigkill_mid_stream_loses_and_duplicates_nothing(instance):
    instance.start_web()
    instance.request("POST", "/api/v1/sessions", {"id": "r", "x_budget": 60, "y_budget": 200})
    acknowledged: list[int] = []
    stop = threading.Event()

    def stream() -> None:
        n = 0
        while not stop.is_set():
            try:
                status, body = instance.request("POST", "/api/v1/sessions/r/items", turn(n), timeout=5)
            except OSError:
                return
            if status == 201:
                acknowledged.append(body["position"])
            n += 1

    writer = threading.Thread(target=stream)
    writer.start()
    while len(acknowledged) < 150:
        threading.Event().wait(0.01)
    instance.kill_web()
    stop.set()
    writer.join(timeout=30)
    instance.start_web()

    # Append after restart: positions continue, nothing reused.
    status, body = instance.request(
        "POST", "/api/v1/sessions/r/items", {"role": "assistant", "text": "after restart"}
    )
    sent = len(acknowledged)
    assert status == 201
    assert body["position"] in (sent, sent + 1)  # +1: one request may have committed as the kill landed
    assert acknowledged == list(range(sent))
    report = instance.manage("shell", "--no-imports", "-c", AUDIT)
    positions, duplicates, unreachable = (int(v) for v in report.split())
    assert positions >= sent + 1
    assert (duplicates, unreachable) == (0, 0)


# Every item row has a distinct position, and every archived item is cited by a live bullet.
AUDIT = """
from memory.models import Item, Bullet
rows = list(Item.objects.filter(session__sid="r", kind="history").select_related("chunk"))
positions = [r.position for r in rows]
live = {h for b in Bullet.objects.filter(session__sid="r", superseded=False) for h in b.hash_refs}
unreachable = sum(1 for r in rows if r.tier == "a" and r.chunk.hash not in live)
print(len(positions), len(positions) - len(set(positions)), unreachable)
"""
