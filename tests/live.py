"""Real processes for tests: a web server (and later a worker) on a private OTTO_DATA_DIR."""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

# The SQLite the server runs (ottoweb/db), so the test reads its files with the same library.
from pysqlite3 import dbapi2 as sqlite3  # type: ignore[import-untyped]

from memory.evaluation.ports import free_port

ROOT = Path(__file__).resolve().parent.parent


class Instance:
    """One ottoweb instance: its own data dir, migrated, with a token for user `alice`."""

    def __init__(self, data_dir: Path, *, tablespace: str | None = None, **env: str) -> None:
        """`env` overrides the environment (DB=postgres gives the instance its own PostgreSQL
        database, placed in `tablespace` when one is named)."""
        self.data_dir = data_dir
        self.env = {
            **os.environ,
            "OTTO_DATA_DIR": str(data_dir),
            "DJANGO_SETTINGS_MODULE": "ottoweb.settings",
            "PYTHONUNBUFFERED": "1",
            **env,
        }
        self.port = free_port()
        self.env.setdefault("OTTO_CELERY_QUEUE", f"otto-{self.port}")
        self.database: str | None = None
        self.web: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        UNCLOSED.add(self)
        if self.env.get("DB") == "postgres":
            # Each instance gets its own database, as a second deployment would.
            self.database = f"otto_live_{self.port}"
            placed = f' TABLESPACE "{tablespace}"' if tablespace else ""
            # The port is free, so a database of its name is what a killed earlier run left.
            postgres(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            postgres(f'CREATE DATABASE "{self.database}"{placed}')
            self.env["OTTO_PG_NAME"] = self.database
        try:
            self.manage("migrate", "--noinput")
            self.token = self.manage("create_token", "alice").strip()
        except BaseException:
            self.close()
            raise

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args)} failed: {done.stderr[-2000:]}")
        return done.stdout

    def read(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        """Rows of one query straight from the instance's database, as the server's storage holds them.

        `?` marks a parameter on both backends. A read-only connection of its own: a SQLite reader
        (WAL) and a PostgreSQL snapshot (MVCC) never block the server, nor wait for it.
        """
        if self.database is None:
            db = Path(self.env["OTTO_DATA_DIR"]) / "ottoweb.sqlite3"
            with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
                return connection.execute(sql, params).fetchall()
        with postgres_connection(self.database) as connection:
            connection.read_only = True
            return connection.execute(sql.replace("?", "%s"), params).fetchall()  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_web(self, *, production: bool = False) -> None:
        """`manage.py runserver`, or with `production` the server `make run` starts (uvicorn, MCP at /mcp)."""
        from memory.management.commands.serve import runserver_command, web_command

        log = open(self.data_dir / "web.log", "ab")
        addrport = f"127.0.0.1:{self.port}"
        self.web = subprocess.Popen(
            web_command(addrport, workers=1) if production else runserver_command(addrport),
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/api/v1/openapi.json", timeout=2).read()
                return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if self.web.poll() is not None:
                    raise RuntimeError((self.data_dir / "web.log").read_text()[-3000:]) from None
                time.sleep(0.1)
        raise RuntimeError("web server did not start in 60 s")

    def kill_web(self) -> None:
        if self.web and self.web.poll() is None:
            self.web.send_signal(signal.SIGKILL)
            self.web.wait(timeout=30)
        self.web = None

    def request(
        self,
        method: str,
        path: str,
        body: object | None = None,
        timeout: float = 30,
        token: str | None = None,
    ) -> tuple[int, object]:
        """One API call, as alice (or as the holder of `token`)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token or self.token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw else None

    def start_worker(self, *, concurrency: int = 1) -> subprocess.Popen[bytes]:
        """A real Celery worker on this instance's broker (filesystem by default, or CELERY_BROKER_URL)."""
        from memory.management.commands.serve import worker_command

        log = open(self.data_dir / f"worker{len(self.workers)}.log", "ab")
        worker = subprocess.Popen(
            worker_command(concurrency=concurrency, name=f"w{len(self.workers)}-{self.port}@%h"),
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.workers.append(worker)
        return worker

    def kill_workers(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGKILL)
                worker.wait(timeout=30)
        self.workers = []

    def wait_for_job(self, job_id: str, timeout: float = 120) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, job = self.request("GET", f"/api/v1/jobs/{job_id}")
            if status == 200 and job["status"] in ("done", "failed"):  # type: ignore[index]
                return job  # type: ignore[return-value]
            time.sleep(0.2)
        raise AssertionError(
            f"job {job_id} did not finish in {timeout} s: {self.request('GET', f'/api/v1/jobs/{job_id}')}"
        )

    def close(self) -> None:
        """Stop the instance's processes and drop its PostgreSQL database; safe to call twice."""
        UNCLOSED.discard(self)
        self.kill_workers()
        self.kill_web()
        if self.database:
            postgres(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            self.database = None


# Instances not closed yet. A test that never calls close(), or stops before it does, would leave
# its processes running and its PostgreSQL database behind: they are closed when the process ends.
UNCLOSED: set[Instance] = set()


@atexit.register
def close_unclosed() -> None:
    for instance in list(UNCLOSED):
        instance.close()


def postgres_connection(dbname: str = "postgres", *, autocommit: bool = False) -> Any:
    """A psycopg connection to the test PostgreSQL server (the one settings.py uses under DB=postgres)."""
    import psycopg  # only the DB=postgres runs need it

    return psycopg.connect(host="127.0.0.1", user="postgres", dbname=dbname, autocommit=autocommit)


def postgres(statement: str) -> None:
    """One statement on the server's maintenance database (creating and dropping databases)."""
    with postgres_connection(autocommit=True) as conn:
        conn.execute(statement)


def run_coroutine(coroutine: Any) -> Any:
    """`asyncio.run` on a thread of its own: the browser tests' Playwright keeps an event loop
    running on the main thread for the rest of the session, and a loop cannot start inside one."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as runner:
        return runner.submit(asyncio.run, coroutine).result()
