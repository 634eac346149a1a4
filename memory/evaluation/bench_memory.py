"""`manage.py bench --memory`: the web process's and the worker's resident sets under the largest
requests a client may send (issue 26): a `/runs/fit` of ~30 MB with a session (the worker
stores its evicted turns), a ~30 MB MCP `append_turns` body, and recalls with a large `max_tokens`
over a large session, keyword and semantic. Each probe runs a few times; after each, both
processes' VmRSS and their peak (VmHWM) since the probe began, and again after the processes have
been idle a while. Asserts nothing: the bound it shows is written in docs/benchmarks.md."""

from __future__ import annotations

import http.client
import json
import time
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from accounts.services import issue_token
from memory.evaluation.bench_common import Report, fit_body, latency, timed
from memory.evaluation.bench_server import vm_mb
from memory.evaluation.processes import RECALL_TIMEOUT, WebServer, Worker
from memory.evaluation.synthetic import chatter, questions
from memory.models import Session


class MemoryScale:
    """How big each probe is and how often it runs; --quick makes a smoke run of the same shape."""

    def __init__(self, quick: bool) -> None:
        self.rounds = 1 if quick else 3
        self.idle_s = 1.0 if quick else 10.0
        # Fewer messages than the limit (10,000) but as many bytes: each result ~60 KB. The web
        # process's part grows with the bytes; the worker embedding 10,000 evicted turns would take
        # ten minutes on 2 cores, and its memory depends on the batch, not the count. (A smoke run's
        # 50 turns of 40 KB: the worker stores them in ≈ 10 s; 200 took 40.)
        self.fit_messages = 50 if quick else 1_000
        # Bytes of the fit body and the MCP body: the body limit's 90 %.
        self.body_bytes = 2_000_000 if quick else int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE * 0.9)
        # The recall session: tool outputs of up to an item's limit, and ordinary turns beside them.
        self.outputs = 2 if quick else 40
        self.output_chars = 100_000 if quick else settings.OTTO_MAX_ITEM_CHARS
        self.turns = 100 if quick else 1_000
        self.small = 10 if quick else 50  # small appends and recalls timed at the warm state


def long_text(chars: int, *, seed: int) -> str:
    """`chars` characters of varied prose (a tool output of many distinct words)."""
    parts: list[str] = []
    size, n = 0, 0
    while size < chars:
        for _, text in chatter(200, seed=seed * 1_000 + n):
            parts.append(text)
            size += len(text) + 1
        n += 1
    return " ".join(parts)[:chars]


def mcp_append_body(round_: int, *, body_bytes: int, session: str) -> bytes:
    """A JSON-RPC `tools/call` of `append_turns` as an MCP client sends it, about `body_bytes` long:
    turns of an item's limit each (more text than a batch may hold, so it is refused whole)."""
    per_turn = min(settings.OTTO_MAX_ITEM_CHARS, body_bytes)
    turns = [
        {"role": "tool", "text": (f"r{round_} t{n} " + "output " * per_turn)[:per_turn]}
        for n in range(max(1, body_bytes // per_turn))
    ]
    call = {"name": "append_turns", "arguments": {"session": session, "turns": turns}}
    return json.dumps({"jsonrpc": "2.0", "id": round_, "method": "tools/call", "params": call}).encode()


def reset_peak(pid: int) -> bool:
    """Start VmHWM again from the current resident set (Linux's clear_refs 5); False where refused."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class MemorySections(Report):
    """`--memory`: resident sets of a real web server and worker under the largest requests."""

    def _sample(self, server: WebServer, worker: Worker) -> dict[str, int]:
        web, work = server.process.pid, worker.process.pid
        return {
            "web": vm_mb(web, "VmRSS"),
            "web_peak": vm_mb(web, "VmHWM"),
            "worker": vm_mb(work, "VmRSS"),
            "worker_peak": vm_mb(work, "VmHWM"),
        }

    def _say(self, label: str, sample: dict[str, int], note: str) -> None:
        self.emit(
            f"{label}: web {sample['web']} MB (peak {sample['web_peak']} MB), "
            f"worker {sample['worker']} MB (peak {sample['worker_peak']} MB); {note}"
        )

    def _idle(self, label: str, server: WebServer, worker: Worker, seconds: float) -> dict[str, int]:
        time.sleep(seconds)
        sample = self._sample(server, worker)
        self.emit(
            f"{label}: web {sample['web']} MB, worker {sample['worker']} MB "
            f"(after {seconds:g} s with nothing to do)"
        )
        return sample

    def memory_ceiling(self, quick: bool) -> dict[str, Any]:
        scale = MemoryScale(quick)
        user, _ = get_user_model().objects.get_or_create(username="bench-memory")
        _, token = issue_token(user=user, name="bench-memory")
        sessions = Session.objects.filter(user=user)
        server = WebServer(token)
        worker: Worker | None = None
        out: dict[str, Any] = {"limits": {"body_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE}}
        try:
            # As `manage.py serve` starts it.
            worker = Worker(concurrency=2)
            out["started"] = self._idle("memory started", server, worker, scale.idle_s)

            # Warm: both processes have loaded what every request needs (the embedders, the
            # tokenizer); small appends and recalls timed, the latency a remedy must not cost.
            server.expect(201, "POST", "/api/v1/sessions", {"id": "small"})
            path = "/api/v1/sessions/small/items"
            appends = [
                timed(partial(server.expect, 201, "POST", path, {"role": r, "text": t}, keep_alive=True))
                for r, t in chatter(scale.small, seed=41)
            ]
            worker.settle(sessions.filter(sid="small"))

            def ask(sid: str, query: str, **more: Any) -> tuple[int, float]:
                start = time.perf_counter()
                status, _ = server.call(
                    "POST", f"/api/v1/sessions/{sid}/recall", {"query": query, **more}, timeout=RECALL_TIMEOUT
                )
                return status, time.perf_counter() - start

            asked = questions(scale.small + 1, seed=42)
            ask("small", asked[0])  # loads the query embedder
            recalls = [ask("small", q)[1] for q in asked[1:]]
            out["small_append"], out["small_recall"] = latency(appends), latency(recalls)
            self.line("memory small appends", out["small_append"], "appends", "one kept-alive connection")
            self.line("memory small recalls", out["small_recall"], "recalls", f"{scale.small} chunks")
            out["warm"] = self._idle("memory warm", server, worker, scale.idle_s)

            out["fit"] = self._fit(scale, server, worker, sessions)
            out["fit_idle"] = self._idle("memory fit idle", server, worker, scale.idle_s)
            out["mcp"] = self._mcp(scale, server, worker)
            out["mcp_idle"] = self._idle("memory mcp idle", server, worker, scale.idle_s)
            out["recall"] = self._recalls(scale, server, worker, sessions, ask)
            out["recall_idle"] = self._idle("memory recall idle", server, worker, scale.idle_s)
        finally:
            if worker is not None:
                worker.stop()
            server.stop()
        probes = [sample for kind in ("fit", "mcp", "recall") for sample in out[kind]["after"]]
        out["ceiling"] = {
            "web_peak": max(s["web_peak"] for s in probes),
            "worker_peak": max(s["worker_peak"] for s in probes),
            "web_over_warm": out["recall_idle"]["web"] - out["warm"]["web"],
            "worker_over_warm": out["recall_idle"]["worker"] - out["warm"]["worker"],
        }
        ceiling = out["ceiling"]
        self.emit(
            f"memory ceiling: web peak {ceiling['web_peak']} MB, worker peak {ceiling['worker_peak']} MB "
            f"under every probe; idle afterwards web {ceiling['web_over_warm']:+d} MB, worker "
            f"{ceiling['worker_over_warm']:+d} MB against warm"
        )
        return out

    def _fit(self, scale: MemoryScale, server: WebServer, worker: Worker, sessions: Any) -> dict[str, Any]:
        """The largest accepted `/runs/fit` with a session: the web process fits it, the worker stores
        and embeds every evicted message."""
        server.expect(201, "POST", "/api/v1/sessions", {"id": "fit"})
        after, seconds, statuses = [], [], dict[str, int]()
        for round_ in range(1, scale.rounds + 1):
            # Round 1 evicts a new transcript, which the worker stores and embeds; later rounds resend
            # it, as an agent resends its transcript with every call: the web process does all its
            # work again, and the worker finds every turn already stored.
            body = fit_body(1, messages=scale.fit_messages, body_bytes=scale.body_bytes, session="fit")
            size = len(json.dumps(body))
            reset_peak(server.process.pid), reset_peak(worker.process.pid)
            start = time.perf_counter()
            status, _ = server.call("POST", "/api/v1/runs/fit", body, timeout=900)
            seconds.append(time.perf_counter() - start)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
            del body
            # The worker's part: every evicted message stored and embedded.
            stored, waited = worker.settle(sessions.filter(sid="fit"))
            sample = self._sample(server, worker)
            after.append(sample)
            self._say(
                f"memory fit {round_}",
                sample,
                f"/runs/fit of {scale.fit_messages:,} messages, {size / 1e6:.1f} MB, answered {status} "
                f"in {seconds[-1]:.1f} s; the worker then stored them ({stored:,} turns in the session) "
                f"in {waited:.1f} s",
            )
        return {"after": after, "seconds": [round(s, 2) for s in seconds], "statuses": statuses}

    def _mcp(self, scale: MemoryScale, server: WebServer, worker: Worker) -> dict[str, Any]:
        """A ~30 MB `tools/call append_turns` to /mcp, as an MCP client sends it."""
        after, seconds, answers = [], [], []
        for round_ in range(1, scale.rounds + 1):
            raw = mcp_append_body(round_, body_bytes=scale.body_bytes, session="mcp")
            reset_peak(server.process.pid), reset_peak(worker.process.pid)
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=900)
            start = time.perf_counter()
            try:
                conn.request(
                    "POST",
                    "/mcp",
                    body=raw,
                    headers={
                        "Authorization": f"Bearer {server.token}",
                        "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                    },
                )
                response = conn.getresponse()
                answer = response.read()
            finally:
                conn.close()
            seconds.append(time.perf_counter() - start)
            answers.append(_mcp_outcome(response.status, answer))
            sample = self._sample(server, worker)
            after.append(sample)
            self._say(
                f"memory mcp {round_}",
                sample,
                f"tools/call append_turns of {len(raw) / 1e6:.1f} MB, answered {answers[-1]} "
                f"in {seconds[-1]:.1f} s",
            )
        return {"after": after, "seconds": [round(s, 2) for s in seconds], "answers": answers}

    def _recalls(
        self, scale: MemoryScale, server: WebServer, worker: Worker, sessions: Any, ask: Any
    ) -> dict[str, Any]:
        """Recalls of up to 200,000 tokens, keyword and semantic, over a session of large tool
        outputs and ordinary turns (built first, the worker embedding it)."""
        server.expect(201, "POST", "/api/v1/sessions", {"id": "big"})
        per_batch = max(1, settings.OTTO_MAX_BATCH_BYTES // (scale.output_chars + 64))
        outputs = [
            {"role": "tool", "text": long_text(scale.output_chars, seed=k)} for k in range(scale.outputs)
        ]
        for start in range(0, len(outputs), per_batch):
            batch = {"items": outputs[start : start + per_batch]}
            server.expect(201, "POST", "/api/v1/sessions/big/items/batch", batch, timeout=600)
        del outputs
        turns = [{"role": r, "text": t} for r, t in chatter(scale.turns, seed=43)]
        for start in range(0, len(turns), settings.OTTO_MAX_BATCH_ITEMS):
            batch = {"items": turns[start : start + settings.OTTO_MAX_BATCH_ITEMS]}
            server.expect(201, "POST", "/api/v1/sessions/big/items/batch", batch, timeout=600)
        count, waited = worker.settle(sessions.filter(sid="big"))
        built = self._sample(server, worker)
        self._say(
            "memory recall session",
            built,
            f"{scale.outputs} tool outputs of {scale.output_chars:,} characters and {scale.turns:,} turns "
            f"appended; the worker embedded {count:,} turns in {waited:.1f} s",
        )
        after, seconds, statuses = [], [], dict[str, int]()
        asked = questions(scale.rounds, seed=44)
        for round_, query in enumerate(asked, 1):
            reset_peak(server.process.pid), reset_peak(worker.process.pid)
            took = []
            for match in ("keyword", "semantic"):
                status, spent = ask("big", query, match=match, max_tokens=200_000)
                statuses[str(status)] = statuses.get(str(status), 0) + 1
                took.append(spent)
            seconds.append(took)
            sample = self._sample(server, worker)
            after.append(sample)
            self._say(
                f"memory recall {round_}",
                sample,
                f"a keyword and a semantic recall, max_tokens 200,000, in {took[0]:.1f} s and {took[1]:.1f} s",
            )
        return {
            "session": built,
            "after": after,
            "seconds": [[round(s, 2) for s in pair] for pair in seconds],
            "statuses": statuses,
        }


def _mcp_outcome(status: int, raw: bytes) -> str:
    """What an MCP answer said, in a few words: the HTTP status, and the tool error's code."""
    try:
        result = json.loads(raw).get("result") or {}
    except ValueError:
        return str(status)
    code = (result.get("structuredContent") or {}).get("code")
    return (
        f"{status} {'tool error ' + str(code) if result.get('isError') else 'ok'}"
        if code or result
        else str(status)
    )
