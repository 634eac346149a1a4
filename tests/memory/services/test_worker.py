"""Jobs on a real Celery worker process: filesystem broker, Redis, SIGKILL mid-compaction, racing appends."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

import pytest

from tests.live import Instance
from tests.stubs import SlowChat, StubServer

pytestmark = pytest.mark.slow

AUDIT = """
from memory.models import Item, Bullet, Chunk
rows = list(Item.objects.filter(session__sid="w", kind="history").select_related("chunk").order_by("position"))
live = {h for b in Bullet.objects.filter(session__sid="w", superseded=False) for h in b.hash_refs}
chunks = set(Chunk.objects.filter(session__sid="w").values_list("hash", flat=True))
print(len(rows), len({r.position for r in rows}), sum(r.tier == "a" and r.chunk.hash not in live for r in rows), len(live - chunks))
print("|".join(r.chunk.text for r in rows))
"""


def turn(n: int) -> dict:
    return {
        "role": "assistant",
        "text": f"Turn {n}: checked build {n * 7 % 31} and shard {n % 5}; all green.",
    }


def audit(instance: Instance) -> tuple[int, int, int, int, list[str]]:
    out = instance.manage("shell", "--no-imports", "-c", AUDIT).strip().splitlines()
    rows, positions, unreachable, dangling = (int(v) for v in out[-2].split())
    return rows, positions, unreachable, dangling, out[-1].split("|")


def append_until_compaction(instance: Instance, start: int = 0) -> tuple[str, int]:
    n = start
    while True:
        status, body = instance.request("POST", "/api/v1/sessions/w/items", turn(n))
        assert status == 201, body
        n += 1
        if body["compaction"]:
            return body["compaction"]["job_id"], n


@pytest.fixture
def instance(tmp_path, request):
    env = getattr(request, "param", {})
    inst = Instance(tmp_path / "data", OTTO_COMPACTION="job", **env)
    yield inst
    inst.close()


def run_compaction_and_reembed(instance: Instance) -> None:
    instance.start_web()
    # The scale-out suite runs two workers (OTTO_TEST_WORKERS=2); the claim keeps them apart.
    for _ in range(int(os.environ.get("OTTO_TEST_WORKERS", "1"))):
        instance.start_worker()
    instance.request("POST", "/api/v1/sessions", {"id": "w", "x_budget": 60, "y_budget": 200})
    job_id, sent = append_until_compaction(instance)

    compaction = instance.wait_for_job(job_id)
    _, context = instance.request("GET", "/api/v1/sessions/w/context")
    _, reembed = instance.request("POST", "/api/v1/sessions/w/reembed", {})
    finished = instance.wait_for_job(reembed["job_id"])
    _, answer = instance.request("POST", "/api/v1/sessions/w/recall", {"query": "build 14 shard 2"})

    assert (compaction["status"], compaction["kind"], compaction["session"]) == ("done", "compact", "w")
    assert context["bullets"] and context["tokens"]["bullets"] + context["tokens"]["y_raw"] <= 200 + 60
    assert (finished["status"], finished["progress"], finished["total"]) == ("done", sent, sent)
    assert answer["degraded"] is None and answer["results"]["history"]


def test_a_worker_on_the_filesystem_broker_runs_compaction_and_reembed(instance):
    run_compaction_and_reembed(instance)


VECTORS = """
from memory.models import Item, ItemVector, TierState
print(Item.objects.filter(session__sid="v").count(), ItemVector.objects.filter(session__sid="v").count(),
      max(TierState.objects.filter(session__sid="v").values_list("generation", flat=True)))
"""


def test_the_worker_writes_vectors_for_new_turns_with_no_recall_and_no_compaction(instance):
    """Appends stay free of the model; the worker embeds a burst of turns shortly after they land."""
    instance.start_web()
    instance.start_worker()
    instance.request("POST", "/api/v1/sessions", {"id": "v"})
    for n in range(12):
        status, _ = instance.request("POST", "/api/v1/sessions/v/items", turn(n))
        assert status == 201
    status, _ = instance.request(
        "POST", "/api/v1/sessions/v/items", {"role": "tool", "kind": "context", "text": "ls: 3 files"}
    )
    assert status == 201

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = instance.manage("shell", "--no-imports", "-c", VECTORS).strip().splitlines()[-1]
        items, vectors, generation = (int(v) for v in out.split())
        if vectors == items:
            break
        time.sleep(0.5)
    assert (items, vectors, generation) == (13, 13, 0)


@pytest.mark.parametrize("instance", [{"CELERY_BROKER_URL": "redis://127.0.0.1:6379/7"}], indirect=True)
def test_a_worker_on_redis_runs_compaction_and_reembed(instance):
    run_compaction_and_reembed(instance)


def test_sigkill_mid_compaction_the_job_completes_once_after_restart(tmp_path):
    chat = SlowChat(delay=60)
    with StubServer(chat) as stub:
        instance = Instance(
            tmp_path / "data", OTTO_COMPACTION="job", OTTO_SUMMARIZER=f"openai:{stub.url}/v1#stub"
        )
        try:
            instance.start_web()
            instance.start_worker()
            instance.request("POST", "/api/v1/sessions", {"id": "w", "x_budget": 60, "y_budget": 200})
            job_id, sent = append_until_compaction(instance)
            assert chat.started.wait(60), "the worker never asked the summariser"

            instance.kill_workers()  # SIGKILL while the summariser is answering
            chat.delay = 0
            _, stuck = instance.request("GET", f"/api/v1/jobs/{job_id}")
            instance.start_worker()
            job = instance.wait_for_job(job_id)
            rows, positions, unreachable, dangling, texts = audit(instance)
            _, session = instance.request("GET", "/api/v1/sessions/w")
        finally:
            instance.close()

    assert stuck["status"] == "running"
    assert job["status"] == "done"
    assert (rows, positions, unreachable, dangling) == (sent, sent, 0, 0)
    assert texts == [turn(n)["text"] for n in range(sent)]
    assert session["generation"] == 1


def test_a_thousand_appends_racing_a_compaction_all_arrive_in_order(tmp_path):
    chat = SlowChat(delay=3)
    with StubServer(chat) as stub:
        instance = Instance(
            tmp_path / "data", OTTO_COMPACTION="job", OTTO_SUMMARIZER=f"openai:{stub.url}/v1#stub"
        )
        try:
            instance.start_web()
            instance.start_worker()
            instance.request("POST", "/api/v1/sessions", {"id": "w", "x_budget": 200, "y_budget": 800})
            _, first = append_until_compaction(instance)
            for n in range(first, first + 1000):
                # A generous client timeout: this test is about what arrives, not how fast (bench's job).
                status, _ = instance.request("POST", "/api/v1/sessions/w/items", turn(n), timeout=120)
                assert status == 201
            total = first + 1000
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                _, context = instance.request("GET", "/api/v1/sessions/w/context")
                if context["tokens"]["bullets"] + context["tokens"]["y_raw"] <= 800 + 200:
                    break
                time.sleep(0.5)
            rows, positions, unreachable, dangling, texts = audit(instance)
        finally:
            instance.close()

    assert chat.calls >= 2
    assert (rows, positions, unreachable, dangling) == (total, total, 0, 0)
    assert texts == [turn(n)["text"] for n in range(total)]


def test_serve_runs_web_and_worker_and_stops_both_on_ctrl_c(tmp_path):
    import signal
    import subprocess
    import sys

    from tests.live import ROOT, free_port

    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=instance.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        instance.port = port
        deadline = time.monotonic() + 60
        while instance_status(instance) != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        instance.request("POST", "/api/v1/sessions", {"id": "w", "x_budget": 60, "y_budget": 200})
        job_id, _ = append_until_compaction(instance)
        job = instance.wait_for_job(job_id)
        with urllib.request.urlopen(f"{instance.url}/static/vendor/htmx.min.js", timeout=10) as response:
            static = (response.status, response.headers["Content-Type"], response.headers.get("ETag"))
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(f"{instance.url}/mcp", data=b"{}", method="POST"))
    finally:
        serve.send_signal(signal.SIGINT)
        output = serve.communicate(timeout=60)[0].decode()
        instance.close()

    assert job["status"] == "done"  # the worker beside the web server ran it
    assert static[:2] == (200, "text/javascript; charset=utf-8")
    assert static[2]  # served with validators by the production server, not Django's debug view
    assert refused.value.code == 401  # MCP is served by the same process
    assert "development server" not in output
    assert "Uvicorn running on" in output
    assert serve.returncode == 0
    assert output.rstrip().endswith("stopped")
    still_running = subprocess.run(
        ["pgrep", "-f", f"ottoweb.asgi:application --host 127.0.0.1 --port {port}"]
    )
    assert still_running.returncode == 1


def instance_status(instance: Instance) -> int:
    try:
        return instance.request("GET", "/api/v1/sessions", timeout=2)[0]
    except OSError:
        return 0
