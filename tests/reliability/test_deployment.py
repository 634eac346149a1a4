"""The deployment docs/reliability.md documents: gunicorn with several processes, and a worker."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.live import ROOT, Instance

pytestmark = pytest.mark.slow


def test_gunicorn_with_two_processes_and_a_worker_serves_appends_compaction_and_recall(tmp_path):
    instance = Instance(tmp_path / "data", OTTO_COMPACTION="job")
    log = open(tmp_path / "gunicorn.log", "ab")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "ottoweb.wsgi", "-w", "2", "-b", f"127.0.0.1:{instance.port}"],
        cwd=ROOT,
        env=instance.env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        instance.start_worker()
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(instance.url + "/api/v1/openapi.json", timeout=2).read()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert server.poll() is None and time.monotonic() < deadline, (
                    tmp_path / "gunicorn.log"
                ).read_text()
                time.sleep(0.2)

        assert (
            instance.request("POST", "/api/v1/sessions", {"id": "g", "x_budget": 60, "y_budget": 200})[0]
            == 201
        )
        job_id = None
        for n in range(40):
            status, body = instance.request(
                "POST",
                "/api/v1/sessions/g/items",
                {"role": "assistant", "text": f"Build {n} passed on shard {n % 3}."},
            )
            assert status == 201, body
            job_id = job_id or (body["compaction"] or {}).get("job_id")  # type: ignore[index]
        assert job_id is not None
        assert instance.wait_for_job(job_id)["status"] == "done"
        status, answer = instance.request(
            "POST", "/api/v1/sessions/g/recall", {"query": "Build 7", "match": "keyword"}
        )

        assert status == 200
        hits = [t["text"] for p in answer["results"]["history"] for t in p["turns"] if t["hit"]]  # type: ignore[index]
        assert hits[0] == "Build 7 passed on shard 1."
        _, items = instance.request("GET", "/api/v1/sessions/g")
        assert items["turns"] == 40  # type: ignore[index]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        log.close()
        instance.close()
