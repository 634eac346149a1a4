"""The window table a deployment fetches (memory/windows.py): in the background, at most hourly,
retried after a failure, the last good table kept. A stub table service on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import time_machine

from memory.engine import inrun
from memory.windows import RefreshingWindows


class TableServer:
    """A stub window-table service on 127.0.0.1: answers queued (status, body) pairs, counts hits."""

    def __init__(self) -> None:
        self.replies: list[tuple[int, object]] = []
        self.hits = 0
        self.gate = threading.Event()
        self.gate.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.gate.wait()
                outer.hits += 1
                status, body = outer.replies.pop(0) if outer.replies else (200, {"acme:m": 9000})
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/windows.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@contextmanager
def table_server() -> Iterator[TableServer]:
    stub = TableServer()
    stub.thread.start()
    try:
        yield stub
    finally:
        stub.gate.set()
        stub.server.shutdown()
        stub.server.server_close()


@pytest.fixture
def stub():
    with table_server() as server:
        yield server


def test_registry_fetches_the_table_in_the_background_without_blocking_a_lookup(stub):
    stub.replies = [(200, {"openai:gpt-4o": 64000, "acme:new-model": 32000})]
    stub.gate.clear()  # the table service hangs until released
    registry = RefreshingWindows(url=stub.url)

    thread = registry.warm()
    # The fetch is stuck in the stub, yet a lookup answers at once from the bundled table.
    during = registry.lookup("openai:gpt-4o")
    stub.gate.set()
    assert thread is not None
    thread.join()

    assert during == inrun.WindowInfo("openai:gpt-4o", 128000, "table")
    assert registry.lookup("openai:gpt-4o") == inrun.WindowInfo("openai:gpt-4o", 64000, "table")
    assert registry.lookup("acme:new-model").window == 32000
    # The fixed entry wins over any table.
    assert registry.lookup("deepseek:deepseek-flash").window == 1048576
    assert stub.hits == 1


def test_registry_refreshes_at_most_hourly(stub):
    stub.replies = [(200, {"acme:m": 9000}), (200, {"acme:m": 12000})]
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False) as clock:
        registry = RefreshingWindows(url=stub.url)
        registry.warm()
        registry.wait()
        clock.shift(3599)
        assert registry.warm() is None
        assert registry.lookup("acme:m").window == 9000
        clock.shift(1)
        registry.warm()
        registry.wait()

    assert stub.hits == 2
    assert registry.lookup("acme:m").window == 12000


def test_registry_retries_a_failed_fetch_after_five_minutes(stub):
    stub.replies = [(500, {"error": "down"}), (200, {"acme:m": 9000})]
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False) as clock:
        registry = RefreshingWindows(url=stub.url)
        registry.warm()
        registry.wait()
        assert registry.last_error is not None
        assert registry.lookup("acme:m") == inrun.WindowInfo("acme:m", 128000, "default")
        clock.shift(299)
        assert registry.warm() is None
        clock.shift(1)
        registry.warm()
        registry.wait()

    assert stub.hits == 2
    assert registry.last_error is None
    assert registry.lookup("acme:m") == inrun.WindowInfo("acme:m", 9000, "table")


def test_registry_keeps_the_last_good_table_when_a_refresh_fails(stub):
    stub.replies = [(200, {"acme:m": 9000}), (200, "not a table")]
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False) as clock:
        registry = RefreshingWindows(url=stub.url)
        registry.warm()
        registry.wait()
        clock.shift(3600)
        registry.warm()
        registry.wait()

    assert registry.last_error == "the window table has no usable entry"
    assert registry.lookup("acme:m").window == 9000


def test_registry_without_a_url_never_fetches():
    registry = RefreshingWindows()

    assert registry.warm() is None
    assert registry.fetches == 0
