"""What every `manage.py bench` section shares: how much work a figure does, the latency summary,
and the one-line report each figure prints."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.core.management.base import OutputWrapper

from memory.engine.inrun import Message

# Questions asked before timing starts: the model is loaded and caches are filled by then.
WARM_UP = 3


class Scale:
    """How much work each figure does; --quick shrinks everything to a smoke run."""

    def __init__(self, quick: bool) -> None:
        self.engine_appends = 2_000 if quick else 20_000
        self.service_appends = 100 if quick else 2_000
        # Embedding the HTTP sessions' turns (the worker's MiniLM, ≈ 0.1 s a turn on two cores) is
        # most of a quick run: its sessions are small.
        self.http_appends = 25 if quick else 500
        self.session_turns = 20 if quick else 50
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


class Report:
    """The printed lines, for the sections' mixins; the management command supplies `stdout`."""

    stdout: OutputWrapper

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


def fit_body(round_: int, *, messages: int, body_bytes: int, session: str | None) -> dict[str, Any]:
    """A `/runs/fit` of `messages` messages (tool calls and their results) near `body_bytes` bytes."""
    steps = (messages - 2) // 2
    result_chars = body_bytes // steps - 200
    transcript: list[Message] = [{"role": "system", "content": "agent"}, {"role": "user", "content": "go"}]
    for n in range(steps):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        transcript += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {
                "role": "tool",
                "tool_call_id": f"c{n}",
                "content": (f"r{round_} {n} " + "log ok " * result_chars)[:result_chars],
            },
        ]
    body: dict[str, Any] = {"model": "openai:gpt-4", "messages": transcript, "related_errors": False}
    if session is not None:
        body["session"] = session
    return body
