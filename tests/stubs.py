"""Local stub HTTP servers standing in for hosted model APIs (the only fakes we allow).

They speak the provider's wire format on 127.0.0.1, so the real client library is exercised.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Handler = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


class StubServer:
    def __init__(self, handle: Handler) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        stub = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                stub.requests.append((self.path, body, dict(self.headers)))
                status, answer = handle(self.path, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def fake_vector(text: str, dim: int) -> list[float]:
    """A deterministic vector per text (the stub's 'model')."""
    seed = hashlib.sha256(text.encode()).digest()
    return [((seed[i % 32] + i) % 17) / 17.0 - 0.5 for i in range(dim)]


def gemini_embeddings(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Gemini's embedContent / batchEmbedContents wire format."""
    requests = body.get("requests") or [body]
    out = []
    for request in requests:
        text = " ".join(p.get("text", "") for p in request["content"]["parts"])
        dim = int(request.get("outputDimensionality") or 8)
        out.append({"values": fake_vector(text, dim)})
    return 200, {"embeddings": out}


class SlowChat:
    """An OpenAI-compatible /chat/completions that cites every item, after `delay` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.started = threading.Event()
        self.calls = 0

    def __call__(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        import re
        import time

        self.calls += 1
        self.started.set()
        time.sleep(self.delay)
        prompt = body["messages"][-1]["content"]
        numbers = re.findall(r"^\[(\d+)\]", prompt, flags=re.M)
        content = "\n".join(f"- summary of item {n} [sources: {n}]" for n in numbers[::2])
        content += "\n- the rest [sources: " + ", ".join(numbers[1::2] or numbers[:1]) + "]"
        return 200, {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
