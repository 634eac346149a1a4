"""What the MCP gate refuses before any token or tool is looked at: a Host this server does not
answer for (never reflected into the challenge or the metadata), a browser Origin other than this
server's own, and GET on /mcp (no event stream is ever held open)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memory.mcp.http import METADATA_PATH, PATH, BearerGate


async def _inner(scope, receive, send):  # the MCP app behind the gate: never reached here
    raise AssertionError("the request reached the MCP app")


def call(method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "scheme": "http",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    # A thread of its own: the browser tests' Playwright keeps an event loop running on this one.
    with ThreadPoolExecutor(1) as runner:
        runner.submit(asyncio.run, BearerGate(_inner)(scope, receive, send)).result()
    start, body = sent
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, json.loads(body["body"])


@pytest.mark.parametrize("path", [PATH, METADATA_PATH + PATH])
def test_a_host_this_server_does_not_answer_for_is_refused_and_never_reflected(path):
    status, headers, body = call("POST", path, {"Host": "evil.example:8000"})

    assert (status, body["code"]) == (400, "bad_host")
    assert "evil" not in json.dumps(body) and "evil" not in json.dumps(headers)


def test_the_metadata_names_the_allowed_host_the_request_came_to():
    status, _, body = call("GET", METADATA_PATH + PATH, {"Host": "127.0.0.1:8123"})

    assert status == 200
    assert body["resource"] == "http://127.0.0.1:8123/mcp"


@pytest.mark.parametrize("origin", ["http://127.0.0.1:9999", "http://localhost:8123", "null"])
def test_a_page_of_another_origin_is_refused_even_on_this_machine(origin):
    status, _, body = call("POST", PATH, {"Host": "127.0.0.1:8123", "Origin": origin})

    assert (status, body["code"]) == (403, "forbidden_origin")


def test_this_servers_own_origin_goes_on_to_the_token_check():
    status, headers, body = call("POST", PATH, {"Host": "127.0.0.1:8123", "Origin": "http://127.0.0.1:8123"})

    assert (status, body["code"]) == (401, "unauthorized")
    assert 'resource_metadata="http://127.0.0.1:8123/.well-known/' in headers["www-authenticate"]


def test_get_on_mcp_is_refused_at_once_with_allow_post():
    status, headers, body = call("GET", PATH, {"Host": "127.0.0.1:8123"})

    assert (status, headers["allow"], body["code"]) == (405, "POST", "method_not_allowed")


def test_testserver_is_no_host_of_a_production_process():
    root = Path(__file__).resolve().parents[3]
    hosts = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='ottoweb.settings'; "
            "from django.conf import settings; print(settings.ALLOWED_HOSTS)",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout

    assert "testserver" not in hosts and "127.0.0.1" in hosts
