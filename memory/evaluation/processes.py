"""The web server and the Celery worker as real processes, for measurements that go through HTTP
(`manage.py bench`, `manage.py eval_memory --via-api`).

Both run on this process's OTTO_DATA_DIR in job mode, as `make run` starts them; logs go to
`web.log` and `worker.log` there.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db.models import QuerySet

from memory.models import Item, ItemVector, Job, Session

from .ports import free_port


class ServerHung(Exception):
    """The web server stopped answering (seen: SQLite 3.51.1's VFS deadlock, see docs/benchmarks.md)."""


class WorkerStuck(Exception):
    """The worker exited, or did not write the vectors it was waiting for in time."""


# An append answers in milliseconds; a minute of silence means the server is stuck, not slow.
APPEND_TIMEOUT = 60.0
# The first recall loads the query embedder (and embeds, unstored, at most
# services.RECALL_EMBED_LIMIT stragglers): seconds, but a busy machine stretches a model load a long way.
RECALL_TIMEOUT = 600.0
# A session's turns are embedded a second or so after its last append; ten minutes means stuck.
WORKER_TIMEOUT = 600.0
# The worker imports Django and Celery and connects to the broker before it says "ready".
WORKER_START_TIMEOUT = 120.0


def production_env() -> dict[str, str]:
    """The web server's and the worker's environment: this process's, in job mode as `make run` is.

    A test run sets OTTO_COMPACTION=inline for itself; the HTTP figures are the production shape's.
    """
    return {**os.environ, "PYTHONUNBUFFERED": "1", "OTTO_COMPACTION": "job"}


def terminate(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL if it has not gone in 20 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


# `manage.py bench`'s web server: "production" (what `make run` starts) or "runserver" (Django's
# development server, ours with TCP_NODELAY), to compare the two on one machine.
BENCH_SERVERS = ("production", "runserver")


class WebServer:
    """The production web server `make run` starts (uvicorn serving ottoweb/asgi.py), or with
    OTTO_BENCH_SERVER=runserver the development server, on this process's OTTO_DATA_DIR, in job mode.
    One process, pid known."""

    def __init__(self, token: str) -> None:
        from memory.management.commands.serve import runserver_command, web_command

        self.token = token
        self.port = free_port()
        self.kind = os.environ.get("OTTO_BENCH_SERVER", "production")
        if self.kind not in BENCH_SERVERS:
            raise CommandError(f"OTTO_BENCH_SERVER must be one of {', '.join(BENCH_SERVERS)}")
        addrport = f"127.0.0.1:{self.port}"
        self.log = open(Path(settings.DATA_DIR) / "web.log", "ab")
        self.process = subprocess.Popen(
            runserver_command(addrport) if self.kind == "runserver" else web_command(addrport, workers=1),
            cwd=settings.BASE_DIR,
            env=production_env(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        self.requests = 0
        # Only appends use the kept connection.
        self.kept = http.client.HTTPConnection("127.0.0.1", self.port, timeout=APPEND_TIMEOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/api/v1/openapi.json", timeout=5)[0] == 200:
                    return
            except (OSError, ServerHung):
                pass
            if self.process.poll() is not None:
                raise CommandError(f"the web server exited; see {self.log.name}")
            time.sleep(0.1)
        self.stop()
        raise CommandError("the web server did not start in 120 s")

    def call(
        self,
        method: str,
        path: str,
        body: object | None = None,
        *,
        keep_alive: bool = False,
        timeout: float = APPEND_TIMEOUT,
        token: str | None = None,
    ) -> tuple[int, Any]:
        """One request (as the holder of `token`, by default the server's); a fresh connection each
        time unless `keep_alive` (then one shared connection).

        Raises ServerHung when no answer comes within `timeout` seconds.
        """
        headers = {"Authorization": f"Bearer {token or self.token}", "Content-Type": "application/json"}
        if not keep_alive:
            headers["Connection"] = "close"
        conn = (
            self.kept if keep_alive else http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        )
        payload = json.dumps(body) if body is not None else None
        try:
            try:
                conn.request(method, path, body=payload, headers=headers)
            except (BrokenPipeError, ConnectionResetError):
                if not keep_alive:
                    raise
                # The server closed the idle kept connection before this request reached it: the
                # request was not read, so it is sent again on a new connection.
                conn.close()
                conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except TimeoutError:
            raise ServerHung(
                f"{method} {path} got no answer in {timeout:.0f} s, after {self.requests:,} answered requests"
            ) from None
        finally:
            if not keep_alive:
                conn.close()
        self.requests += 1
        return response.status, json.loads(raw) if raw else None

    def expect(self, status: int, method: str, path: str, body: object | None = None, **kw: Any) -> Any:
        got, answer = self.call(method, path, body, **kw)
        if got != status:
            raise CommandError(f"{method} {path} answered {got}, not {status}: {answer}")
        return answer

    def stop(self) -> None:
        self.kept.close()
        terminate(self.process)
        self.log.close()


class Worker:
    """A Celery worker as `manage.py serve` starts it, on this process's OTTO_DATA_DIR, in job mode.

    `--pool threads` keeps it one process, so its pid is the one whose resident set is reported.
    """

    def __init__(self, *, concurrency: int = 2) -> None:
        from memory.management.commands.serve import worker_command

        self.log = open(Path(settings.DATA_DIR) / "worker.log", "ab")
        # Earlier workers of this run wrote to the same log: only this one's "ready" counts.
        offset = self.log.seek(0, os.SEEK_END)
        self.process = subprocess.Popen(
            worker_command(concurrency=concurrency),
            cwd=settings.BASE_DIR,
            env=production_env(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        # Wait for it to consume, so its start-up (imports, broker connection) overlaps no figure.
        deadline = time.monotonic() + WORKER_START_TIMEOUT
        while time.monotonic() < deadline:
            with open(self.log.name, "rb") as log:
                log.seek(offset)
                if b" ready." in log.read():
                    return
            if self.process.poll() is not None:
                self.log.close()
                raise CommandError(f"the worker exited; see {self.log.name}")
            time.sleep(0.1)
        self.stop()
        raise CommandError(f"the worker did not start in {WORKER_START_TIMEOUT:.0f} s")

    def settle(self, sessions: QuerySet[Session], *, timeout: float = WORKER_TIMEOUT) -> tuple[int, float]:
        """Wait until every item of `sessions` has a vector and none of them has an unfinished job;
        return how many items there are and the seconds it took.

        Polls the database from this process: the worker writes the vectors, nothing reports back.
        """
        start = time.monotonic()
        items = Item.objects.filter(session__in=sessions)
        vectors = ItemVector.objects.filter(session__in=sessions)
        jobs = Job.objects.filter(session__in=sessions).unfinished()
        while True:
            total, done = items.count(), vectors.count()
            if done >= total and not jobs.exists():
                return total, time.monotonic() - start
            if self.process.poll() is not None:
                raise WorkerStuck(
                    f"the worker exited ({self.process.returncode}) with {done:,} of {total:,} turns "
                    f"embedded; see {self.log.name}"
                )
            if time.monotonic() - start > timeout:
                raise WorkerStuck(
                    f"the worker embedded {done:,} of {total:,} turns in {timeout:.0f} s; see {self.log.name}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        terminate(self.process)  # a warm shutdown: Celery finishes the tasks it is running first
        self.log.close()


def serve_with_worker(token: str) -> tuple[WebServer, Worker]:
    """A web server (answering with `token` by default) and a worker beside it, on this data folder;
    the server is stopped again when the worker cannot start."""
    server = WebServer(token)
    try:
        return server, Worker()
    except BaseException:
        server.stop()
        raise
