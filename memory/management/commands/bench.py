"""`manage.py bench [--quick] [--sizes 1000,5000,10000,50000] [--json OUT] [--profile] [--keep-data]`.

Prints throughput, latency and memory figures and asserts nothing (docs/evaluation.md: benchmarks
print numbers, tests assert behaviour). One labelled line per figure:

- `append engine` / `append service` / `append api` / `append http` / `append http keep-alive`: one
  item per call through the engine alone (`TieredQueue` over `InMemoryStore`), `services.append_items`
  on SQLite, the API in-process (Django's test client: routing, auth, ninja, no socket), and the real
  production web server (uvicorn serving ottoweb/asgi.py) with a Celery worker beside it, as `make run`
  starts them (a fresh connection per request, as curl does; then one reused connection, as an HTTP
  client library does) — p50/p95/max per append and appends/s;
- (the in-process sections' sessions are deleted before the worker starts: it starts with no backlog)
- `worker embedding`: how long after the last HTTP append the worker had written a vector for every
  turn of the web server's session; `worker embedding sessions` the same per extra session;
- `compaction engine` / `compaction service`: one generation over a full Y (the default budget);
- `query embedding`: the model alone on one question;
- `recall N chunks`: `memory.recall.recall` in-process on an N-chunk session, query embedding
  included; `recall http` the same over HTTP on the web server's session once the worker has
  embedded it, so the first recall only loads the query embedder;
- `embedding`: documents embedded per second while building the sessions;
- `rss web`: the web process's resident set after serving recalls; it embeds queries only, documents
  are the worker's (`/proc/<pid>/status`); `rss worker`: the worker's after embedding every session;
  `rss bench peak`: this process's peak (`getrusage`);
- `load average` before and after, because a busy machine inflates every latency.

It never touches the configured database: the command re-executes itself in a child process whose
OTTO_DATA_DIR is a fresh temporary folder (deleted afterwards unless --keep-data). The child
migrates that folder and the web server and worker it starts use it too. They run in job mode
whatever OTTO_COMPACTION says (the production shape: appends hand embedding and compaction to the
worker); the in-process appends are measured in the configured mode. Big sessions for the
in-process recalls are built through `services.append_items` in batches at the default budgets,
compacting inline (no worker is involved), so they carry real compaction generations.
"""

from __future__ import annotations

import cProfile
import io
import json
import math
import os
import pstats
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test import Client, override_settings

from memory import services, store
from memory.engine import embeddings
from memory.engine.memstore import InMemoryStore
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize
from memory.engine.synthetic import chatter, questions
from memory.evaluation.processes import (
    RECALL_TIMEOUT,
    ServerHung,
    WebServer,
    Worker,
    WorkerStuck,
    terminate,
)
from memory.models import Bullet, Session, TierState
from memory.recall import recall
from memory.services import embedding

# The child's marker: set to its private OTTO_DATA_DIR, so it knows it may write there.
CHILD_FLAG = "OTTO_BENCH_CHILD"
# Cache folders settings.py derives from OTTO_DATA_DIR: the child derives its own.
DERIVED_ENV = ("TIKTOKEN_CACHE_DIR", "OTTO_MODEL_CACHE", "FASTEMBED_CACHE_PATH")
DEFAULT_SIZES = "1000,5000,10000,50000"
# Embedding dominates a quick run (about a hundredth of a second a turn on two cores).
QUICK_SIZES = "300"
# Items per services.append_items call when building a big session (one transaction each).
BUILD_BATCH = 500
# Questions asked before timing starts: the model is loaded and caches are filled by then.
WARM_UP = 3


class Scale:
    """How much work each figure does; --quick shrinks everything to a smoke run."""

    def __init__(self, quick: bool) -> None:
        self.engine_appends = 2_000 if quick else 20_000
        self.service_appends = 100 if quick else 2_000
        self.http_appends = 50 if quick else 500
        self.generations = 1 if quick else 4
        self.recalls = 20 if quick else 100
        self.http_recalls = 10 if quick else 50
        self.sessions = 3 if quick else 20
        # A quick run compacts a smaller Y so the smoke test stays short.
        self.y_tokens = 20_000 if quick else settings.OTTO_Y_BUDGET


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q from 0 to 100) of `values`."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def latency(seconds: Sequence[float]) -> dict[str, Any]:
    """p50/p95/max in milliseconds, the rate the samples add up to, and how many there were."""
    total = sum(seconds)
    return {
        "p50_ms": round(percentile(seconds, 50) * 1000, 3),
        "p95_ms": round(percentile(seconds, 95) * 1000, 3),
        "max_ms": round(max(seconds) * 1000, 3),
        "per_s": round(len(seconds) / total, 1) if total else 0.0,
        "n": len(seconds),
    }


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def vm_mb(pid: int, field: str) -> int:
    """A `/proc/<pid>/status` figure (VmRSS, VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise CommandError(f"/proc/{pid}/status has no {field}")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, from `/proc/<pid>/stat`."""
    # The command name, in parentheses, may hold spaces: count the fields after it.
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_admin(statement: str) -> None:
    """Run `statement` on the PostgreSQL server of the configured database, outside any database."""
    import psycopg

    db = settings.DATABASES["default"]
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"],
        user=db["USER"],
        password=db["PASSWORD"],
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(statement)


def private_postgres_database() -> str:
    """A new, empty database beside the configured one, for the bench's private store."""
    name = f"otto_bench_{os.getpid()}_{int(time.time())}"
    postgres_admin(f'CREATE DATABASE "{name}"')
    return name


def _exit_once(*_: object) -> None:
    # A second SIGTERM (pkill reaches the parent and the child alike, and the parent passes one on)
    # must not interrupt the finally blocks the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


class Command(BaseCommand):
    help = "Print append, compaction, recall and memory figures (on a private temporary database)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument(
            "--quick", action="store_true", help="a fast smoke run: small counts, one small session"
        )
        parser.add_argument(
            "--sizes",
            default=None,
            help=f"recall session sizes in chunks, comma-separated (default {DEFAULT_SIZES}; --quick {QUICK_SIZES})",
        )
        parser.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
        parser.add_argument(
            "--profile", action="store_true", help="cProfile the recalls at the largest size, print the top"
        )
        parser.add_argument("--keep-data", action="store_true", help="keep the temporary data folder")
        parser.add_argument(
            "--contention",
            type=float,
            default=0.0,
            help="only this: for this many seconds one user sends the largest accepted batch and "
            "/runs/fit in a loop while another appends (p50/p95 of the other's appends)",
        )
        parser.add_argument(
            "--load",
            type=float,
            default=0.0,
            help="also run 16 clients on 8 sessions for this many seconds against a server and a worker",
        )

    def handle(self, *args, sizes: str | None, **options):  # type: ignore[no-untyped-def]
        spec = sizes or (QUICK_SIZES if options["quick"] else DEFAULT_SIZES)
        try:
            parsed = [int(s) for s in spec.split(",") if s.strip()]
        except ValueError:
            raise CommandError(f"--sizes takes comma-separated chunk counts, not {spec!r}") from None
        if not parsed or min(parsed) < 10:
            raise CommandError("every size must be at least 10 chunks")
        # A terminated bench unwinds (its finally blocks stop the server and the worker, remove the
        # data) instead of leaving them running.
        signal.signal(signal.SIGTERM, _exit_once)
        if os.environ.get(CHILD_FLAG) == str(settings.DATA_DIR):
            self.measure(sizes=parsed, **options)
        else:
            self.run_child(sizes=parsed, **options)

    # --- the parent: a private data folder, then the child does the work ----------------------------

    def run_child(
        self,
        *,
        sizes: list[int],
        quick: bool,
        json_out: str | None,
        profile: bool,
        keep_data: bool,
        load: float = 0.0,
        contention: float = 0.0,
        **_: Any,
    ) -> None:  # type: ignore[no-untyped-def]
        folder = Path(tempfile.mkdtemp(prefix="ottoweb-bench-")).resolve()
        env = {
            k: v
            for k, v in os.environ.items()
            if not (k in DERIVED_ENV and v.startswith(str(settings.DATA_DIR)))
        }
        env.update({"OTTO_DATA_DIR": str(folder), CHILD_FLAG: str(folder), "PYTHONUNBUFFERED": "1"})
        database = private_postgres_database() if connection.vendor == "postgresql" else None
        if database is not None:
            env["OTTO_PG_NAME"] = database  # on the scale-out path the private store is a database
        argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "bench"]
        argv += ["--sizes", ",".join(map(str, sizes))]
        argv += ["--quick"] if quick else []
        argv += ["--profile"] if profile else []
        argv += ["--load", str(load)] if load else []
        argv += ["--contention", str(contention)] if contention else []
        argv += ["--json", str(Path(json_out).resolve())] if json_out else []
        self.stdout.write(f"bench: private data folder {folder}")
        child: subprocess.Popen[str] | None = None
        try:
            child = subprocess.Popen(
                argv,
                cwd=settings.BASE_DIR,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert child.stdout is not None
            for line in child.stdout:
                self.stdout.write(line.rstrip("\n"))
            if child.wait() != 0:
                raise CommandError(f"the benchmark process failed (exit {child.returncode})")
        finally:
            if child is not None:
                terminate(child)  # stopped early: the child stops its server and worker on SIGTERM
            if keep_data:
                kept = f" and PostgreSQL database {database}" if database else ""
                self.stdout.write(f"bench: data kept in {folder}{kept}")
            else:
                shutil.rmtree(folder, ignore_errors=True)
                if database is not None:
                    postgres_admin(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

    # --- the child: every figure ----------------------------------------------------------------------

    def emit(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def line(self, label: str, stats: dict[str, Any], unit: str, extra: str = "") -> None:
        self.emit(
            f"{label}: p50 {stats['p50_ms']:.2f} ms, p95 {stats['p95_ms']:.2f} ms, "
            f"max {stats['max_ms']:.1f} ms, {stats['per_s']:,.1f} {unit}/s "
            f"({stats['n']:,} samples{', ' + extra if extra else ''})"
        )

    def load(self, when: str) -> list[float]:
        figures = [round(v, 2) for v in os.getloadavg()]
        self.emit(f"load average {when}: {figures[0]} {figures[1]} {figures[2]} ({os.cpu_count()} CPUs)")
        return figures

    def measure(
        self,
        *,
        sizes: list[int],
        quick: bool,
        json_out: str | None,
        profile: bool,
        load: float = 0.0,
        contention: float = 0.0,
        **_: Any,
    ) -> None:  # type: ignore[no-untyped-def]
        call_command("migrate", verbosity=0, interactive=False)
        if contention:
            figures = {"load_before": self.load("before"), "contention": self.contention(contention)}
            figures["load_after"] = self.load("after")
            if json_out:
                Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")
            return
        scale = Scale(quick)
        user, _ = get_user_model().objects.get_or_create(username="bench")
        figures: dict[str, Any] = {
            "cpus": os.cpu_count(),
            "model": embedding.database_stamp(),
            "budgets": {"x": settings.OTTO_X_BUDGET, "y": settings.OTTO_Y_BUDGET},
            "quick": quick,
        }
        figures["compaction_mode"] = settings.OTTO_COMPACTION
        self.emit(
            f"model {figures['model']}; budgets X={settings.OTTO_X_BUDGET} Y={settings.OTTO_Y_BUDGET}; "
            f"in-process appends compact {settings.OTTO_COMPACTION}, the web server and its worker job "
            "(sessions for in-process recall are built compacting inline)"
        )
        figures["load_before"] = self.load("before")
        figures["append_engine"] = self.append_engine(scale)
        figures["append_service"] = self.append_service(scale, user)
        figures["compaction_engine"], figures["compaction_service"] = self.compaction(scale, user)
        figures.update(self.web(scale))
        figures["query_embedding"] = self.query_embedding(scale)
        figures["recall"] = {}
        for size in sizes:
            figures["recall"][str(size)] = self.recall_at(
                size, scale, user, profile=profile and size == max(sizes)
            )
        docs = sum(r["embedded"] for r in figures["recall"].values())
        seconds = sum(r["embed_s"] for r in figures["recall"].values())
        figures["embedding_docs_per_s"] = round(docs / seconds, 1) if seconds else 0.0
        self.emit(
            f"embedding: {figures['embedding_docs_per_s']:.1f} documents/s ({docs:,} documents, turn + previous turn)"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        figures["rss_bench_peak_mb"] = peak
        self.emit(f"rss bench peak: {peak} MB (this process, getrusage ru_maxrss)")
        if load:
            figures["concurrency"] = self.concurrency(load)
        figures["load_after"] = self.load("after")
        if json_out:
            Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")
            self.emit(f"figures written to {json_out}")

    def concurrency(self, seconds: float) -> dict[str, Any]:
        """16 clients on 8 sessions against a real server and worker, compactions running (issue 9)."""
        from memory.loadgen import run_load

        user, _ = get_user_model().objects.get_or_create(username="bench-load")
        _, token = services.issue_token(user=user, name="bench-load")
        server = WebServer(token)
        worker: Worker | None = None
        try:
            worker = Worker(concurrency=1)
            result = run_load(
                f"http://127.0.0.1:{server.port}", token, clients=16, sessions=8, seconds=seconds
            )
        finally:
            if worker is not None:
                worker.stop()
            server.stop()
        self.emit(f"concurrency (16 clients, 8 sessions, {seconds:.0f} s): {result.summary()}")
        return {
            "seconds": round(result.seconds, 1),
            "requests": result.requests,
            "append_p50_ms": result.quantile(0.50),
            "append_p95_ms": result.quantile(0.95),
            "statuses": {str(k): v for k, v in sorted(result.statuses.items())},
            "errors": len(result.errors),
        }

    def contention(self, seconds: float) -> dict[str, Any]:
        """Issue 18, point 2: user A sends the largest accepted batch and the largest accepted
        `/runs/fit` (with a session) back to back, each in its own thread, while user B appends
        one turn at a time, and reads its context after each; B's append latency is the figure."""
        import threading

        from memory.engine.inrun import Message

        tokens = {}
        for name in ("bench-a", "bench-b"):
            user, _ = get_user_model().objects.get_or_create(username=name)
            tokens[name] = services.issue_token(user=user, name=name)[1]
        server = WebServer(tokens["bench-a"])
        worker: Worker | None = None
        items, text_bytes = settings.OTTO_MAX_BATCH_ITEMS, settings.OTTO_MAX_BATCH_BYTES
        steps = (settings.OTTO_MAX_FIT_MESSAGES - 2) // 2
        # Each tool result sized so the whole body is just inside OTTO_MAX_BODY_BYTES.
        result_chars = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE * 0.9) // steps - 200

        def batch(round_: int) -> dict[str, Any]:
            size = text_bytes // items - 40
            return {
                "items": [
                    {"role": "tool", "text": (f"r{round_} i{n} " + "ok " * size)[:size]} for n in range(items)
                ]
            }

        def fit(round_: int) -> dict[str, Any]:
            messages: list[Message] = [
                {"role": "system", "content": "agent"},
                {"role": "user", "content": "go"},
            ]
            for n in range(steps):
                call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                messages += [
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {
                        "role": "tool",
                        "tool_call_id": f"c{n}",
                        "content": (f"r{round_} {n} " + "log ok " * result_chars)[:result_chars],
                    },
                ]
            return {"session": "a", "model": "openai:gpt-4", "messages": messages, "related_errors": False}

        stop = threading.Event()
        a_statuses: dict[str, dict[int, int]] = {"batch": {}, "fit": {}}
        a_seconds: dict[str, list[float]] = {"batch": [], "fit": []}

        def send(kind: str) -> None:
            path = "/api/v1/runs/fit" if kind == "fit" else "/api/v1/sessions/a/items/batch"
            round_ = 0
            while not stop.is_set():
                round_ += 1
                body = fit(round_) if kind == "fit" else batch(round_)
                start = time.perf_counter()
                status, _ = server.call("POST", path, body, timeout=900)
                a_seconds[kind].append(time.perf_counter() - start)
                a_statuses[kind][status] = a_statuses[kind].get(status, 0) + 1

        senders = [threading.Thread(target=send, args=(k,), daemon=True) for k in ("batch", "fit")]
        b_appends: list[float] = []
        b_reads: list[float] = []
        b_statuses: dict[int, int] = {}
        try:
            worker = Worker(concurrency=1)
            server.expect(201, "POST", "/api/v1/sessions", {"id": "a"})
            server.call("POST", "/api/v1/sessions", {"id": "b"}, token=tokens["bench-b"])
            for thread in senders:
                thread.start()
            deadline = time.monotonic() + seconds
            n = 0
            while time.monotonic() < deadline:
                start = time.perf_counter()
                status, _ = server.call(
                    "POST",
                    "/api/v1/sessions/b/items",
                    {"role": "user", "text": f"bob {n}"},
                    token=tokens["bench-b"],
                )
                b_appends.append(time.perf_counter() - start)
                b_statuses[status] = b_statuses.get(status, 0) + 1
                start = time.perf_counter()
                status, _ = server.call("GET", "/api/v1/sessions/b/context", token=tokens["bench-b"])
                b_reads.append(time.perf_counter() - start)
                b_statuses[status] = b_statuses.get(status, 0) + 1
                n += 1
        finally:
            stop.set()
            for thread in senders:
                thread.join(timeout=900)
            if worker is not None:
                worker.stop()
            server.stop()
        figures = {
            "seconds": seconds,
            "limits": {
                "batch_items": items,
                "batch_bytes": text_bytes,
                "fit_messages": settings.OTTO_MAX_FIT_MESSAGES,
                "body_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            },
            "b_append": latency(b_appends),
            "b_read": latency(b_reads),
            "b_statuses": {str(k): v for k, v in sorted(b_statuses.items())},
            "a_batch": latency(a_seconds["batch"]) if a_seconds["batch"] else None,
            "a_fit": latency(a_seconds["fit"]) if a_seconds["fit"] else None,
            "a_statuses": {k: {str(s): c for s, c in v.items()} for k, v in a_statuses.items()},
        }
        self.line(
            "contention: B's appends", figures["b_append"], "appends", f"statuses {figures['b_statuses']}"
        )
        self.line("contention: B's context reads", figures["b_read"], "reads")
        for kind in ("a_batch", "a_fit"):
            if figures[kind]:
                self.line(
                    f"contention: A's {kind[2:]}",
                    figures[kind],
                    "requests",
                    f"statuses {figures['a_statuses'][kind[2:]]}",
                )
        return figures

    def append_engine(self, scale: Scale) -> dict[str, Any]:
        queue = TieredQueue(
            InMemoryStore(),
            x_budget=settings.OTTO_X_BUDGET,
            y_budget=settings.OTTO_Y_BUDGET,
            summarize=extractive_summarize,
        )
        times, compactions = [], 0
        for role, text in chatter(scale.engine_appends, seed=1):
            start = time.perf_counter()
            appended = queue.append(role, text)
            times.append(time.perf_counter() - start)
            # Compaction is its own figure below; here it only keeps the tiers realistic.
            if appended.needs_compaction:
                queue.compact()
                compactions += 1
        stats = latency(times)
        self.line("append engine", stats, "appends", f"InMemoryStore; {compactions} compactions not timed")
        return stats

    def append_service(self, scale: Scale, user: Any) -> dict[str, Any]:
        session = services.create_session(user=user, sid="bench-service")
        times = [
            timed(
                lambda r=role, t=text: services.append_items(
                    session=session, items=[services.NewItem(role=r, text=t)]
                )
            )
            for role, text in chatter(scale.service_appends, seed=2)
        ]
        stats = latency(times)
        self.line(
            "append service",
            stats,
            "appends",
            f"services.append_items on {connection.vendor}, one item a call",
        )
        return stats

    def compaction(self, scale: Scale, user: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Time each generation alone: fill Y to just under its budget, then force the compaction.

        The engine queue and the service session see the same turns, and the summariser is
        deterministic, so both compact the same Y (raw turns plus the previous generation's bullets).
        """
        queue = TieredQueue(
            InMemoryStore(), x_budget=1, y_budget=scale.y_tokens, summarize=extractive_summarize
        )
        # X of one token: every turn moves straight to Y, as an X overflow would move it.
        session = services.create_session(
            user=user, sid="bench-compaction", x_budget=1, y_budget=scale.y_tokens
        )
        turns = iter(chatter(scale.generations * scale.y_tokens // 20, seed=3))
        engine_times, service_times, raw = [], [], []
        for _ in range(scale.generations):
            batch: list[services.NewItem] = []
            while True:
                role, text = next(turns)
                draft = queue.draft(role, text)
                if queue.store.totals("history").y + draft.tokens > scale.y_tokens:
                    break
                queue.append(role, text)
                batch.append(services.NewItem(role=role, text=text))
            for first in range(0, len(batch), BUILD_BATCH):
                services.append_items(session=session, items=batch[first : first + BUILD_BATCH])
            raw.append(len(batch))
            engine_times.append(timed(lambda: queue.compact(force=True)))
            service_times.append(timed(lambda: services.compact_session(session=session, force=True)))
        extra = f"Y of {scale.y_tokens:,} tokens: {sum(raw) // len(raw):,} raw turns + the previous bullets"
        engine, service = latency(engine_times), latency(service_times)
        for label, stats in (("compaction engine", engine), ("compaction service", service)):
            self.emit(
                f"{label}: p50 {stats['p50_ms']:.0f} ms, max {stats['max_ms']:.0f} ms per generation "
                f"({stats['n']} generations, {extra})"
            )
        return engine, service

    def web(self, scale: Scale) -> dict[str, Any]:
        """The API in-process, then a real server process: appends, recalls and its resident set."""
        user, _ = get_user_model().objects.get_or_create(username="bench-http")
        _, token = services.issue_token(user=user, name="bench")
        out: dict[str, Any] = {}

        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
        client.post("/api/v1/sessions", {"id": "bench-api"}, content_type="application/json")
        times = []
        for role, text in chatter(scale.service_appends, seed=6):
            start = time.perf_counter()
            response = client.post(
                "/api/v1/sessions/bench-api/items",
                {"role": role, "text": text},
                content_type="application/json",
            )
            times.append(time.perf_counter() - start)
            if response.status_code != 201:
                raise CommandError(f"an in-process API append answered {response.status_code}")
        out["append_api"] = latency(times)
        self.line("append api", out["append_api"], "appends", "in-process test client, no socket")

        # The in-process sections' sessions have given their figures; in job mode they queued
        # embedding (and compactions) for a worker that was not running yet. Deleted, the tasks find
        # nothing to do, and the HTTP figures do not pay for thousands of turns of backlog.
        for done in Session.objects.all():
            services.delete_session(session=done)
        server = WebServer(token)
        worker: Worker | None = None
        try:
            worker = Worker()
            server.expect(201, "POST", "/api/v1/sessions", {"id": "bench-http"})
            path = "/api/v1/sessions/bench-http/items"
            turns = chatter(2 * scale.http_appends, seed=4)
            # The worker embeds these turns while the later ones are appended: on a small machine it
            # competes with the server for the CPUs, so each line says how much it used meanwhile.
            busy = cpu_s(worker.process.pid)
            times = [
                timed(lambda r=role, t=text: server.expect(201, "POST", path, {"role": r, "text": t}))
                for role, text in turns[: scale.http_appends]
            ]
            out["append_http"] = latency(times)
            used = cpu_s(worker.process.pid)
            out["append_http"]["worker_cpu_s"] = round(used - busy, 1)
            busy = used
            self.line(
                "append http",
                out["append_http"],
                "appends",
                f"{'uvicorn (production server)' if server.kind == 'production' else 'runserver'}, "
                f"a new connection per request; the worker used "
                f"{out['append_http']['worker_cpu_s']:.1f} CPU s meanwhile",
            )
            times = [
                timed(
                    lambda r=role, t=text: server.expect(
                        201, "POST", path, {"role": r, "text": t}, keep_alive=True
                    )
                )
                for role, text in turns[scale.http_appends :]
            ]
            out["append_http_keepalive"] = latency(times)
            out["append_http_keepalive"]["worker_cpu_s"] = round(cpu_s(worker.process.pid) - busy, 1)
            self.line(
                "append http keep-alive",
                out["append_http_keepalive"],
                "appends",
                f"one reused connection; the worker used "
                f"{out['append_http_keepalive']['worker_cpu_s']:.1f} CPU s meanwhile",
            )
            # Embedding is off the request path: the appends scheduled it, the worker does it. Recall
            # only once it is done, so the web process embeds queries and nothing else.
            embedded, waited = worker.settle(Session.objects.filter(user=user, sid="bench-http"))
            out["worker_embedding_http"] = {"turns": embedded, "s": round(waited, 2)}
            self.emit(
                f"worker embedding: {embedded:,} turns in {waited:.1f} s after the last HTTP append "
                f"(every turn of the session has a vector; a task waits {services.EMBED_DELAY:g} s "
                "to serve a whole burst)"
            )
            rss_before = vm_mb(server.process.pid, "VmRSS")

            def ask(sid: str, query: str) -> float:
                path = f"/api/v1/sessions/{sid}/recall"
                return timed(
                    lambda: server.expect(200, "POST", path, {"query": query}, timeout=RECALL_TIMEOUT)
                )

            asked = questions(scale.http_recalls + WARM_UP, seed=5)
            # The first recall loads the query embedder: the web process has not needed it before.
            first = ask("bench-http", asked[0])
            for q in asked[1:WARM_UP]:
                ask("bench-http", q)
            out["recall_http"] = latency([ask("bench-http", q) for q in asked[WARM_UP:]])
            out["recall_http"]["first_ms"] = round(first * 1000, 1)
            self.line(
                "recall http",
                out["recall_http"],
                "recalls",
                f"{server.kind} server, {2 * scale.http_appends:,} chunks; the first recall took {first:.1f} s "
                "(model load for the query embedder; the worker had embedded every turn)",
            )
            rss_one = vm_mb(server.process.pid, "VmRSS")
            waits = []
            for n in range(scale.sessions):
                sid = f"bench-http-{n}"
                server.expect(201, "POST", "/api/v1/sessions", {"id": sid})
                items = [{"role": r, "text": t} for r, t in chatter(50, seed=100 + n)]
                server.expect(201, "POST", f"/api/v1/sessions/{sid}/items/batch", {"items": items})
                waits.append(worker.settle(Session.objects.filter(user=user, sid=sid))[1])
                for q in questions(3, seed=200 + n):
                    ask(sid, q)
            out["worker_embedding_sessions"] = latency(waits)
            self.emit(
                f"worker embedding sessions: p50 {percentile(waits, 50):.1f} s, max {max(waits):.1f} s "
                f"from a session's batch append of 50 turns until all had vectors ({len(waits)} sessions)"
            )
            rss_many, peak = vm_mb(server.process.pid, "VmRSS"), vm_mb(server.process.pid, "VmHWM")
            out["rss_web_mb"] = {
                "after_recalls": rss_one,
                "before_first_recall": rss_before,
                "after_more_sessions": rss_many,
                "sessions": scale.sessions + 1,
                "peak": peak,
            }
            self.emit(
                f"rss web: {rss_one} MB after serving recalls, embedding queries only "
                f"({rss_before} MB before the first recall; {rss_many} MB after recalls on "
                f"{scale.sessions + 1} sessions; peak {peak} MB)"
            )
            worker_rss, worker_peak = vm_mb(worker.process.pid, "VmRSS"), vm_mb(worker.process.pid, "VmHWM")
            out["rss_worker_mb"] = {"after_embedding": worker_rss, "peak": worker_peak}
            self.emit(
                f"rss worker: {worker_rss} MB after embedding every turn of the {scale.sessions + 1} HTTP sessions "
                f"(peak {worker_peak} MB; --pool threads, one process)"
            )
        except ServerHung as hung:
            # Report it and go on to the in-process figures: a stuck server must not stop the bench.
            out["server_hung"] = str(hung)
            self.emit(f"web server hung: {hung}; RSS {vm_mb(server.process.pid, 'VmRSS')} MB; see web.log")
        except WorkerStuck as stuck:
            # The same: the in-process figures do not need the worker.
            out["worker_stuck"] = str(stuck)
            self.emit(f"worker stuck: {stuck}")
        finally:
            if worker is not None:
                worker.stop()
            server.stop()
        return out

    def query_embedding(self, scale: Scale) -> dict[str, Any]:
        embedder = embedding.embedder()
        asked = questions(scale.recalls + WARM_UP, seed=7)
        for q in asked[:WARM_UP]:
            embedder.embed_query(q)
        stats = latency([timed(lambda q=q: embedder.embed_query(q)) for q in asked[WARM_UP:]])
        self.line("query embedding", stats, "queries", "the model alone, one question")
        return stats

    def recall_at(self, size: int, scale: Scale, user: Any, *, profile: bool) -> dict[str, Any]:
        session = services.create_session(user=user, sid=f"bench-recall-{size}")
        turns = chatter(size, seed=size)
        start = time.perf_counter()
        # Batches at the default budgets, compacting inline: no worker runs here, and a session that
        # never compacted (generation 0, no bullets) would make recall look cheaper than it is. Each
        # inline compaction embeds the session's pending turns after its commit.
        with override_settings(OTTO_COMPACTION="inline"):
            for first in range(0, size, BUILD_BATCH):
                items = [services.NewItem(role=r, text=t) for r, t in turns[first : first + BUILD_BATCH]]
                services.append_items(session=session, items=items)
        built = time.perf_counter() - start
        start = time.perf_counter()
        embedded = services.embed_items(session=session, kind="history")
        embed_s = time.perf_counter() - start
        generation = TierState.objects.get(session=session, kind="history").generation
        live = Bullet.objects.of_kind(session, "history").live()
        bullets, protected = live.count(), live.filter(protected=True).count()
        asked = questions(scale.recalls + WARM_UP, seed=size)
        # Recall as the web process runs it (ottoweb/wsgi.py): one onnxruntime thread per query
        # embedding unless OTTO_EMBED_THREADS says otherwise. The build above used every core.
        build_threads = os.environ.get("OTTO_EMBED_THREADS")
        embeddings.use_threads(int(build_threads or 1))
        for q in asked[:WARM_UP]:
            recall(session, query=q)
        # A web process's first recall of the session builds its BM25 postings and reads its vectors.
        store.vector_cache.clear()
        store.keyword_cache.clear()
        cold = timed(lambda: recall(session, query=asked[0]))
        stats = latency([timed(lambda q=q: recall(session, query=q)) for q in asked[WARM_UP:]])
        # Compactions embed as they go, so the build time holds most of the embedding for big sizes.
        stats.update(
            {
                "build_s": round(built, 1),
                "embed_s": round(embed_s, 1),
                "embedded": embedded,
                "generations": generation,
                "live_bullets": bullets,
                "protected_bullets": protected,
                "first_recall_ms": round(cold * 1000, 1),
            }
        )
        self.line(
            f"recall {size} chunks",
            stats,
            "recalls",
            f"generation {generation}, {bullets:,} live bullets of which {protected:,} protected; "
            f"built in {built:.0f} s with compactions' embedding, "
            f"then {embedded:,} more embedded in {embed_s:.0f} s; "
            f"query embedded with {os.environ['OTTO_EMBED_THREADS']} thread(s) as in the web process; "
            f"the first recall in a process (its caches cold) {cold * 1000:,.0f} ms",
        )
        if profile:
            # A second pass under the profiler, after the timed one: cProfile inflates what it times.
            profiler = cProfile.Profile()
            for q in asked[WARM_UP:]:
                profiler.runcall(recall, session, query=q)
            for order in ("cumulative", "tottime"):
                report = io.StringIO()
                pstats.Stats(profiler, stream=report).sort_stats(order).print_stats(25)
                self.emit(f"profile of {len(asked) - WARM_UP} recalls at {size} chunks, by {order}:")
                self.emit(report.getvalue())
        embeddings.use_threads(int(build_threads) if build_threads else None)
        return stats
