"""`manage.py bench`'s sections against a real web server and Celery worker (memory/evaluation/
processes.py): appends and recalls over HTTP, the worker's embedding, resident sets, `--load` and
`--contention`."""

from __future__ import annotations

import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from accounts.services import issue_token
from memory import services
from memory.evaluation.bench_common import WARM_UP, Report, Scale, fit_body, latency, percentile, timed
from memory.evaluation.processes import RECALL_TIMEOUT, ServerHung, WebServer, Worker, WorkerStuck
from memory.evaluation.synthetic import chatter, questions
from memory.models import Session


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


class ServerSections(Report):
    """The figures measured through HTTP, with the worker doing the embedding and compaction."""

    def web(self, scale: Scale, user: Any, token: str) -> dict[str, Any]:
        """A real server process and its worker: appends, recalls and their resident sets."""
        out: dict[str, Any] = {}

        # The in-process sections' sessions have given their figures; in job mode they queued
        # embedding (and compactions) for a worker that was not running yet. Deleted, the tasks find
        # nothing to do, and the HTTP figures do not pay for thousands of turns of backlog.
        for done in Session.objects.all():
            services.delete_session(session=done)
        server = WebServer(token)
        worker: Worker | None = None
        try:
            server.expect(201, "POST", "/api/v1/sessions", {"id": "bench-http"})
            path = "/api/v1/sessions/bench-http/items"
            turns = chatter(2 * scale.http_appends, seed=4)
            # The first appends with the worker idle: it starts after them (the server only hands
            # their embedding to the broker either way). Started earlier, it embeds these turns while
            # the later ones arrive, and on two cores that competes with the server, more or less
            # depending on when its first task fires.
            times = [
                timed(partial(server.expect, 201, "POST", path, {"role": role, "text": text}))
                for role, text in turns[: scale.http_appends]
            ]
            out["append_http"] = latency(times)
            self.line(
                "append http",
                out["append_http"],
                "appends",
                f"{'uvicorn (production server)' if server.kind == 'production' else 'runserver'}, "
                "a new connection per request, the worker idle (started after these)",
            )
            worker = Worker()
            # The worker now embeds the turns above while these are appended: the line says how much
            # CPU it used meanwhile.
            busy = cpu_s(worker.process.pid)
            times = [
                timed(
                    partial(server.expect, 201, "POST", path, {"role": role, "text": text}, keep_alive=True)
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
                items = [{"role": r, "text": t} for r, t in chatter(scale.session_turns, seed=100 + n)]
                server.expect(201, "POST", f"/api/v1/sessions/{sid}/items/batch", {"items": items})
                waits.append(worker.settle(Session.objects.filter(user=user, sid=sid))[1])
                for q in questions(3, seed=200 + n):
                    ask(sid, q)
            out["worker_embedding_sessions"] = latency(waits)
            self.emit(
                f"worker embedding sessions: p50 {percentile(waits, 50):.1f} s, max {max(waits):.1f} s "
                f"from a session's batch append of {scale.session_turns} turns until all had vectors "
                f"({len(waits)} sessions)"
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

    def concurrency(self, seconds: float) -> dict[str, Any]:
        """16 clients on 8 sessions against a real server and worker, compactions running (issue 9)."""
        from memory.evaluation.loadgen import run_load

        user, _ = get_user_model().objects.get_or_create(username="bench-load")
        _, token = issue_token(user=user, name="bench-load")
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

        tokens = {}
        for name in ("bench-a", "bench-b"):
            user, _ = get_user_model().objects.get_or_create(username=name)
            tokens[name] = issue_token(user=user, name=name)[1]
        server = WebServer(tokens["bench-a"])
        worker: Worker | None = None
        items, text_bytes = settings.OTTO_MAX_BATCH_ITEMS, settings.OTTO_MAX_BATCH_BYTES
        # The fit's tool results sized so the whole body is just inside OTTO_MAX_BODY_BYTES.
        body_bytes = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE * 0.9)

        def batch(round_: int) -> dict[str, Any]:
            size = text_bytes // items - 40
            return {
                "items": [
                    {"role": "tool", "text": (f"r{round_} i{n} " + "ok " * size)[:size]} for n in range(items)
                ]
            }

        def fit(round_: int) -> dict[str, Any]:
            return fit_body(
                round_, messages=settings.OTTO_MAX_FIT_MESSAGES, body_bytes=body_bytes, session="a"
            )

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
        figures: dict[str, Any] = {
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
