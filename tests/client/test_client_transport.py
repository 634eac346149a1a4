"""ottoweb_client's one exception type holds when no answer of the API's comes back: the client is
pointed at another service, the server closes the connection, answers a page that is not JSON, or
takes longer than the timeout. Each is an OttowebError whose code says whether the request may have
been acted on (never http.client's or json's own exceptions). And an address that already ends in
the API's prefix reaches the API."""

from __future__ import annotations

import socket
import threading
import tomllib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone

import ottoweb_client
import pytest
from ottoweb_client import Ottoweb, OttowebError

from tests.live import ROOT, free_port
from tests.stubs import StubServer

pytestmark = pytest.mark.sqlite_pass  # the client's transport, not the database, is tested


@pytest.fixture
def listener() -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    """`listener(answer)`: the base URL of a TCP server that hands each connection to `answer`."""
    sockets: list[socket.socket] = []

    def start(answer: Callable[[socket.socket], None]) -> str:
        server = socket.create_server(("127.0.0.1", 0))
        sockets.append(server)

        def serve() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                conn.recv(65536)  # the request
                answer(conn)

        threading.Thread(target=serve, daemon=True).start()
        return f"http://127.0.0.1:{server.getsockname()[1]}"

    yield start
    for server in sockets:
        server.close()


def refusal(url: str, timeout: float = 10.0) -> OttowebError:
    with pytest.raises(OttowebError) as raised:
        Ottoweb(url, "otto_x", timeout=timeout).list_sessions()
    return raised.value


def test_another_service_at_the_address_is_a_bad_answer_not_an_http_client_exception(listener):
    def nats(conn: socket.socket) -> None:  # a service that greets in its own protocol
        conn.sendall(b'INFO {"server_id":"N1","version":"2.9.10"}\r\n')
        conn.close()

    error = refusal(listener(nats))

    assert (error.code, error.status) == ("bad_answer", 0)
    assert "not an HTTP answer" in error.detail and "INFO" in error.detail


def test_a_connection_closed_without_an_answer_is_a_bad_answer(listener):
    error = refusal(listener(lambda conn: conn.close()))

    assert error.code == "bad_answer"
    assert error.detail.endswith("the connection was closed without an answer")


def test_a_success_that_is_not_json_is_a_bad_answer_quoting_it(listener):
    def login_page(conn: socket.socket) -> None:  # a proxy's page where the API should be
        page = b"<html>Please sign in</html>"
        head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(page)}\r\n\r\n"
        conn.sendall(head.encode() + page)
        conn.close()

    error = refusal(listener(login_page))

    assert (error.code, error.status) == ("bad_answer", 200)
    assert "the answer is not JSON: <html>Please sign in</html>" in error.detail


def test_no_answer_within_the_timeout_is_a_timeout_saying_it_may_have_been_done(listener):
    held: list[socket.socket] = []
    url = listener(held.append)  # reads the request and never answers

    error = refusal(url, timeout=0.5)

    assert error.code == "timeout"
    assert "no answer within 0.5 s; the server may have acted on it" in error.detail
    for conn in held:
        conn.close()


def test_nothing_listening_is_unreachable_as_before():
    error = refusal(f"http://127.0.0.1:{free_port()}")

    assert (error.code, error.status) == ("unreachable", 0)


@pytest.mark.slow  # a live server
def test_an_address_given_with_the_api_prefix_reaches_the_api(server):
    for url in (server.url, server.url + "/", server.url + "/api/v1", server.url + "/api/v1/"):
        client = Ottoweb(url, server.token)

        assert client.base_url == server.url + "/api/v1"
        assert client.list_sessions()["count"] == 0


def test_times_may_be_datetimes_with_an_offset_and_the_client_names_itself():
    # A datetime was a TypeError of json's; it is sent as ISO 8601. The User-Agent names the client.
    lisbon = datetime(2026, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=1)))
    with StubServer(lambda path, body: (200, {"items": []} if path.endswith("batch") else {})) as stub:
        otto = Ottoweb(stub.url, "otto_x")
        otto.recall("trip", "when?", since=lisbon, until=lisbon + timedelta(days=1))
        otto.append("trip", "user", "We land at 7:40.", occurred_at=lisbon)
        otto.append_batch("trip", [{"role": "user", "text": "hi", "occurred_at": lisbon}])
        late = {"role": "user", "text": "b", "occurred_at": datetime(2026, 5, 1)}
        naive = [
            lambda: otto.recall("trip", "when?", until=datetime(2026, 5, 1)),
            lambda: otto.append("trip", "user", "hi", occurred_at=datetime(2026, 5, 1)),
            lambda: otto.append_batch("trip", [{"role": "user", "text": "a"}, late]),
        ]
        refusals = []
        for call in naive:
            with pytest.raises(OttowebError) as raised:
                call()
            refusals.append((raised.value.code, raised.value.field))

    (recall, _), (append, _), (batch, _) = [(body, headers) for _, body, headers in stub.requests]
    version = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]["version"]
    assert (recall["since"], recall["until"]) == ("2026-05-01T09:30:00+01:00", "2026-05-02T09:30:00+01:00")
    assert append["occurred_at"] == batch["items"][0]["occurred_at"] == "2026-05-01T09:30:00+01:00"
    assert ottoweb_client.__version__ == version
    assert {headers["User-Agent"] for _, _, headers in stub.requests} == {f"ottoweb-client/{version}"}
    # A naive datetime is refused before anything is sent: the server needs an offset.
    assert len(stub.requests) == 3
    assert refusals == [("invalid", "until"), ("invalid", "occurred_at"), ("invalid", "items.1.occurred_at")]


@pytest.mark.parametrize("sid", ["import", "a/b", ".", "..", "", "x" * 129, "trip 2", "caf\u00e9", "a?b"])
def test_an_id_no_session_can_have_is_refused_before_anything_is_sent(sid):
    # get_session("import") was the server's 405 "GET is not allowed on /api/v1/sessions/import",
    # get_session("a/b") its "no such API path". Nothing listens at this address: a request sent
    # would be `unreachable`.
    otto = Ottoweb(f"http://127.0.0.1:{free_port()}", "otto_x")
    calls = [
        lambda: otto.get_session(sid),
        lambda: otto.append(sid, "user", "hi"),
        lambda: otto.recall(sid, "when?"),
        lambda: otto.delete_session(sid),
    ]
    for call in calls:
        with pytest.raises(OttowebError) as raised:
            call()
        assert (raised.value.code, raised.value.field, raised.value.status) == ("invalid", "session_id", 0)
        assert repr(sid) in raised.value.detail
