"""A bounded HTTP load generator for ottoweb (loopback only): used by `manage.py bench --load`
and the reliability tests. No Django here: it speaks to a running server like any client would.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoadResult:
    """What the clients saw: every acknowledged append, latencies, and anything that went wrong."""

    acknowledged: dict[str, list[str]] = field(default_factory=dict)  # session → texts, in ack order
    latencies_ms: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def quantile(self, q: float) -> float:
        if not self.latencies_ms:
            return 0.0
        return round(statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[int(q * 100) - 1], 2)

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())

    def summary(self) -> str:
        return (
            f"{self.requests} requests in {self.seconds:.1f} s ({self.requests / max(self.seconds, 1e-9):.0f}/s), "
            f"append p50 {self.quantile(0.50)} ms, p95 {self.quantile(0.95)} ms, "
            f"statuses {dict(sorted(self.statuses.items()))}, errors {len(self.errors)}"
        )


def _call(
    base: str, token: str, method: str, path: str, body: Any = None, timeout: float = 60
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        raw = err.read()
        try:
            return err.code, json.loads(raw) if raw else None
        except ValueError:
            return err.code, raw[:200].decode("utf-8", "replace")


def run_load(
    base: str,
    token: str,
    *,
    clients: int = 16,
    sessions: int = 8,
    seconds: float = 60.0,
    x_budget: int = 120,
    y_budget: int = 400,
    recall_every: int = 10,
) -> LoadResult:
    """`clients` threads append (and now and then recall) for `seconds`, two or more per session.

    Small budgets keep compactions running throughout. Each client tags its texts, so order per
    client can be checked afterwards. Bounded in time; loopback addresses only.
    """
    if not base.startswith(("http://127.", "http://localhost", "http://[::1]")):
        raise ValueError("the load generator only targets loopback addresses")
    result = LoadResult()
    names = [f"load-{n}" for n in range(sessions)]
    for name in names:
        _call(
            base, token, "POST", "/api/v1/sessions", {"id": name, "x_budget": x_budget, "y_budget": y_budget}
        )
        result.acknowledged[name] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    started = time.monotonic()

    def client(number: int) -> None:
        session = names[number % sessions]
        sent = 0
        while time.monotonic() < deadline:
            text = f"client {number} turn {sent}: checked shard {sent % 7} and build {number * 31 + sent}."
            began = time.perf_counter()
            try:
                status, body = _call(
                    base,
                    token,
                    "POST",
                    f"/api/v1/sessions/{session}/items",
                    {"role": "assistant", "text": text},
                )
            except OSError as exc:
                with lock:
                    result.errors.append(f"client {number}: {exc}")
                continue
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status == 201:
                    result.latencies_ms.append(elapsed)
                    result.acknowledged[session].append(text)
                else:
                    result.errors.append(f"client {number}: {status} {body}")
            sent += 1
            if recall_every and sent % recall_every == 0:
                status, body = _call(
                    base, token, "POST", f"/api/v1/sessions/{session}/recall", {"query": f"shard {sent % 7}"}
                )
                with lock:
                    result.statuses[status] = result.statuses.get(status, 0) + 1
                    if status != 200:
                        result.errors.append(f"client {number} recall: {status} {body}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    result.seconds = time.monotonic() - started
    return result
