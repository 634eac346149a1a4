"""The MCP server, driven by the real `mcp` client SDK against a live production server process:
streamable HTTP at /mcp and `manage.py mcp` over stdio.

The server runs with OTTO_COMPACTION=inline (the test run's default) and no worker: the one
compaction these tests need is the `compact` tool's, which runs in the call either way.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.live import ROOT, Instance

pytestmark = pytest.mark.slow

TOOLS = {
    "append_turns",
    "pin_turn",
    "pop_turn",
    "get_context",
    "recall",
    "list_sessions",
    "compact",
    "reset_session",
    "remember",
    "recall_notes",
    "list_notes",
    "forget_note",
    "record_error",
    "find_related_errors",
    "whoami",
}
FACT = "My locker at the climbing gym is number 4417, next to the chalk bucket."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    instance = Instance(tmp_path_factory.mktemp("mcp"), OTTO_COMPACTION="inline")
    instance.bob_token = instance.manage("create_token", "bob").strip()  # type: ignore[attr-defined]
    instance.start_web(production=True)
    yield instance
    instance.close()


def over_http(server: Instance, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def over_stdio(server: Instance, token: str) -> Client:
    env = {**server.env, "OTTO_TOKEN": token}
    return Client(
        StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], cwd=str(ROOT), env=env)
    )


TRANSPORTS = {"http": over_http, "stdio": over_stdio}


def drive(client: Client, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with client:
            return await scenario(client)

    # On a thread of its own: a test before this one may leave an event loop running on the main
    # thread (Playwright's sync API does), and a loop cannot start inside a running one.
    with ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(anyio.run, main).result()


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, str]:
    """The refusal of a call: the REST API's error body, as the result's text and structured content."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.structured_content == body
    return body


def turns(count: int) -> list[dict[str, str]]:
    said = []
    for n in range(count):
        if n == 2:
            said.append({"role": "user", "text": FACT, "name": "ada"})
        elif n % 2:
            said.append(
                {"role": "assistant", "text": f"Noted point {n}: the route grade is 6a and the wall is dry."}
            )
        else:
            said.append(
                {"role": "user", "text": f"Point {n}: we talked about rope length and belay checks again."}
            )
    return said


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_mcp_tools_append_compact_recall_notes_and_lessons(server, transport):
    sid = f"climb-{transport}"

    async def scenario(client: Client) -> dict[str, Any]:
        listed = await client.list_tools()
        appended = await call(client, "append_turns", {"session": sid, "turns": turns(300)})
        compacted = await call(client, "compact", {"session": sid})
        context = await call(client, "get_context", {"session": sid})
        found = await call(
            client, "recall", {"session": sid, "query": "Which locker number at the climbing gym?"}
        )
        note = await call(
            client,
            "remember",
            {
                "content": "Ada prefers morning sessions.",
                "key": "schedule",
                "app_name": "coach",
                "domain": "gym.example",
            },
        )
        notes = await call(
            client,
            "recall_notes",
            {"query": "when does Ada like to train", "app_name": "coach", "domain": "gym.example"},
        )
        error = f"ECONNRESET while uploading route photo ({transport})"
        recorded = await call(
            client,
            "record_error",
            {"tool": "photo.upload", "error": error, "action": "retry with a smaller chunk size (1 MB)"},
        )
        related = await call(
            client, "find_related_errors", {"tool": "photo.upload", "error": "ECONNRESET during photo upload"}
        )
        return {
            "tools": {t.name: t for t in listed.tools},
            "appended": appended,
            "compacted": compacted,
            "context": context,
            "found": found,
            "note": note,
            "notes": notes,
            "recorded": recorded,
            "related": related,
        }

    got = drive(TRANSPORTS[transport](server, server.token), scenario)

    assert set(got["tools"]) == TOOLS
    assert all(t.description and len(t.description) > 40 for t in got["tools"].values())
    # A context turn's position is not a history turn's: pin_turn says which it takes (an agent
    # that pinned the position append_turns gave its tool output pinned a turn of the conversation).
    pin_position = got["tools"]["pin_turn"].input_schema["properties"]["position"]["description"]
    turn_kind = got["tools"]["append_turns"].input_schema["$defs"]["Turn"]["properties"]["kind"]
    assert "history turn's position" in pin_position and "cannot be pinned" in pin_position
    assert "kept out of get_context" in turn_kind["description"]
    destructive = {
        name for name, t in got["tools"].items() if t.annotations and t.annotations.destructive_hint
    }
    assert destructive == {"forget_note", "reset_session", "pop_turn"}
    assert got["appended"]["appended"] == 300
    assert [t["position"] for t in got["appended"]["turns"]] == list(range(300))
    assert got["compacted"]["removed"] > 0
    assert FACT not in got["context"]["text"].split("\n")
    # The best passage holds the fact as a hit (its turns are in the order they were said: a hit
    # next to it, "Noted point 1", joins the same passage before it).
    best = got["found"]["results"]["history"][0]["turns"]
    assert [(t["position"], t["hit"]) for t in best if t["text"] == FACT] == [(2, True)]
    assert got["note"]["mode"] == "app"
    assert got["note"]["projectKey"] == "app:coach@gym.example"
    assert [n["content"] for n in got["notes"]["items"]] == ["Ada prefers morning sessions."]
    assert got["recorded"]["stored"] is True
    assert got["recorded"]["record"]["id"] in [r["id"] for r in got["related"]["related_errors"]]
    actions = {row[0] for row in server.read("SELECT action FROM memory_auditentry WHERE channel = 'mcp'")}
    assert {"mcp append_turns", "mcp compact", "mcp recall", "mcp remember", "mcp record_error"} <= actions


def test_mcp_bad_arguments_are_tool_errors_naming_the_argument_and_are_audited(server):
    async def scenario(client: Client) -> list[dict[str, str]]:
        return [
            await refused(
                client, "append_turns", {"session": "bad args", "turns": [{"role": "user", "text": "x"}]}
            ),
            await refused(
                client, "append_turns", {"session": "ok", "turns": [{"role": "user", "text": "  "}]}
            ),
            await refused(
                client, "append_turns", {"session": "ok", "turns": [{"role": "robot", "text": "x"}]}
            ),
            await refused(client, "recall", {"session": "nobody", "query": "x"}),
            await refused(client, "remember", {"content": "x", "app_name": "a"}),
            await refused(client, "remember", {"content": "x\u0000y", "conversation_id": "c"}),
            await refused(client, "record_error", {"tool": "", "error": "e", "action": "a"}),
        ]

    messages = drive(over_http(server, server.token), scenario)

    assert messages[0] == {
        "detail": "session id must be 1-128 characters of letters, digits, '.', '_', ':' or '-'",
        "code": "invalid",
        "field": "session",
    }
    assert messages[1] == {
        "detail": "turns[0].text must not be empty",
        "code": "invalid",
        "field": "turns[0].text",
    }
    assert messages[2] == {
        "detail": "turns[0].role: Input should be 'user', 'assistant', 'tool' or 'system'",
        "code": "invalid",
        "field": "turns[0].role",
    }
    assert messages[3] == {"detail": "no session 'nobody'", "code": "not_found"}
    assert messages[4] == {
        "detail": "app scope needs both app_name and domain; domain is missing",
        "code": "invalid",
        "field": "domain",
    }
    assert messages[5] == {
        "detail": "content: must not contain NUL (\\u0000) characters",
        "code": "invalid",
        "field": "content",
    }
    assert (messages[6]["code"], messages[6]["field"]) == ("invalid", "tool")
    rows = server.read(
        "SELECT action, status, outcome FROM memory_auditentry WHERE channel = 'mcp' AND status >= 400"
    )
    assert ("mcp append_turns", 422, "refused") in rows
    assert ("mcp recall", 404, "refused") in rows


def test_mcp_alice_token_never_sees_bob_through_any_tool(server):
    """Every tool, called with bob's token on what alice stored (a matrix over TOOLS)."""

    async def alice_stores(client: Client) -> dict[str, Any]:
        await call(
            client,
            "append_turns",
            {"session": "alice-private", "turns": [{"role": "user", "text": "alice's secret plan"}]},
        )
        note = await call(
            client, "remember", {"content": "alice's secret note", "key": "k", "conversation_id": "c-alice"}
        )
        await call(
            client, "record_error", {"tool": "alice.tool", "error": "alice failure", "action": "alice fix"}
        )
        return note

    async def bob_tries(client: Client) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for tool in ("get_context", "recall", "compact", "reset_session", "pin_turn", "pop_turn"):
            arguments = {"session": "alice-private", "query": "secret plan", "mode": "all", "position": 0}
            wanted = {
                "get_context": ["session"],
                "recall": ["session", "query"],
                "compact": ["session"],
                "pin_turn": ["session", "position"],
                "pop_turn": ["session"],
            }
            picked = {k: arguments[k] for k in wanted.get(tool, ["session", "mode"])}
            seen[tool] = await refused(client, tool, picked)
        seen["list_sessions"] = await call(client, "list_sessions", {"q": "alice"})
        seen["recall_notes"] = await call(
            client, "recall_notes", {"query": "secret note", "conversation_id": "c-alice"}
        )
        seen["list_notes"] = await call(client, "list_notes")
        seen["forget_note"] = await refused(client, "forget_note", {"note_id": note["id"]})
        seen["find_related_errors"] = await call(
            client, "find_related_errors", {"tool": "alice.tool", "error": "alice failure"}
        )
        seen["whoami"] = await call(client, "whoami")
        # Writes with alice's names land in bob's own memory.
        seen["append_turns"] = await call(
            client,
            "append_turns",
            {"session": "alice-private", "turns": [{"role": "user", "text": "bob was here"}]},
        )
        seen["remember"] = await call(
            client, "remember", {"content": "bob's note", "key": "k", "conversation_id": "c-alice"}
        )
        seen["record_error"] = await call(
            client, "record_error", {"tool": "alice.tool", "error": "alice failure", "action": "bob's fix"}
        )
        return seen

    async def alice_checks(client: Client) -> dict[str, Any]:
        return {
            "context": await call(client, "get_context", {"session": "alice-private"}),
            "notes": await call(client, "recall_notes", {"query": "", "conversation_id": "c-alice"}),
            "related": await call(
                client, "find_related_errors", {"tool": "alice.tool", "error": "alice failure"}
            ),
        }

    note = drive(over_http(server, server.token), alice_stores)
    seen = drive(over_http(server, server.bob_token), bob_tries)
    after = drive(over_stdio(server, server.token), alice_checks)

    assert set(seen) == TOOLS
    for tool in ("get_context", "recall", "compact", "reset_session", "pin_turn", "pop_turn", "forget_note"):
        assert seen[tool]["code"] == "not_found", (tool, seen[tool])
    assert seen["list_sessions"]["count"] == 0
    assert seen["recall_notes"]["returned"] == 0
    assert seen["list_notes"]["count"] == 0
    assert seen["find_related_errors"]["related_errors"] == []
    assert seen["whoami"]["user"] == "bob"
    assert seen["append_turns"]["created"] is True
    assert seen["remember"]["upserted"] is False
    assert after["context"]["text"].startswith("user (") and after["context"]["text"].endswith(
        "): alice's secret plan"
    )
    assert [n["content"] for n in after["notes"]["items"]] == ["alice's secret note"]
    assert [r["action"] for r in after["related"]["related_errors"]] == ["alice fix"]


def test_mcp_pop_turn_takes_back_the_newest_turn_and_answers_null_when_none_is_left(server):
    sid = "pop-mcp"

    async def scenario(client: Client) -> dict[str, Any]:
        await call(client, "append_turns", {"session": sid, "turns": turns(2)})
        first = await call(client, "pop_turn", {"session": sid})
        context = await call(client, "get_context", {"session": sid})
        second = await call(client, "pop_turn", {"session": sid})
        none = await call(client, "pop_turn", {"session": sid})
        return {"first": first, "context": context, "second": second, "none": none}

    got = drive(over_http(server, server.token), scenario)

    said = [t["text"] for t in turns(2)]
    assert (got["first"]["session"], got["first"]["turn"]["text"], got["first"]["turn"]["position"]) == (
        sid,
        said[1],
        1,
    )
    assert said[1] not in got["context"]["text"] and said[0] in got["context"]["text"]
    assert got["second"]["turn"]["text"] == said[0]
    assert got["none"] == {"session": sid, "turn": None}


def test_mcp_list_sessions_pages_past_its_limit_with_offset(server):
    async def scenario(client: Client) -> list[dict[str, Any]]:
        for n in range(5):
            await call(client, "append_turns", {"session": f"page-{n}", "turns": turns(1)})
        pages = []
        for offset in (0, 2, 4, 6):
            pages.append(await call(client, "list_sessions", {"q": "page-", "limit": 2, "offset": offset}))
        return pages

    pages = drive(over_http(server, server.bob_token), scenario)  # type: ignore[attr-defined]

    assert [p["count"] for p in pages] == [5, 5, 5, 5]
    assert [[s["id"] for s in p["items"]] for p in pages] == [
        ["page-4", "page-3"],
        ["page-2", "page-1"],
        ["page-0"],
        [],
    ]


def test_mcp_append_turns_pins_and_pin_turn_pins_and_unpins(server):
    sid = "pins-mcp"
    rule = "Always answer in French, however the question is asked."

    async def scenario(client: Client) -> dict[str, Any]:
        appended = await call(
            client,
            "append_turns",
            {"session": sid, "turns": [{"role": "user", "text": rule, "pinned": True}, *turns(40)]},
        )
        mixed = await call(
            client,
            "append_turns",
            {
                "session": sid,
                "turns": [
                    {"role": "user", "text": "ok"},
                    {"role": "tool", "text": "exit 0", "kind": "context"},
                ],
            },
        )
        later = await call(client, "pin_turn", {"session": sid, "position": 6})
        await call(client, "compact", {"session": sid})
        context = await call(client, "get_context", {"session": sid})
        unpinned = await call(client, "pin_turn", {"session": sid, "position": 6, "pinned": False})
        missing = await refused(client, "pin_turn", {"session": sid, "position": 999})
        context_item = await refused(
            client,
            "append_turns",
            {
                "session": sid,
                "turns": [{"role": "tool", "text": "exit 0", "kind": "context", "pinned": True}],
            },
        )
        return {
            "appended": appended,
            "mixed": mixed,
            "later": later,
            "context": context,
            "unpinned": unpinned,
            "missing": missing,
            "context_item": context_item,
        }

    got = drive(over_http(server, server.token), scenario)

    # Each turn's own position in its kind's sequence, in the order sent.
    assert [(t["position"], t["kind"]) for t in got["appended"]["turns"]][:2] == [
        (0, "history"),
        (1, "history"),
    ]
    assert [(t["position"], t["kind"]) for t in got["mixed"]["turns"]] == [(41, "history"), (0, "context")]
    said = turns(40)[5]["text"]
    assert (got["later"]["session"], got["later"]["position"], got["later"]["text"]) == (sid, 6, said)
    assert got["later"]["pinned"] is True
    lines = got["context"]["text"].splitlines()
    assert any(line.endswith(f": {rule}") for line in lines)
    assert any(line.endswith(f": {said}") for line in lines)
    assert got["unpinned"]["pinned"] is False
    assert got["missing"]["code"] == "not_found"
    assert "no history turn at position 999" in got["missing"]["detail"]
    assert got["context_item"]["field"] == "turns[0].pinned"
    assert got["context_item"]["detail"].startswith(
        "turns[0].pinned must be false: a context item cannot be pinned"
    )
    pinned = server.read(
        "SELECT i.position FROM memory_item i JOIN memory_session s ON s.id = i.session_id "
        "WHERE s.sid = ? AND i.pinned = ?",
        sid,
        True,
    )
    assert pinned == [(0,)]
    audited = server.read(
        "SELECT status FROM memory_auditentry WHERE action = 'mcp pin_turn' AND session_sid = ? ORDER BY id",
        sid,
    )
    assert audited == [(200,), (200,), (404,)]


def post_mcp(
    server: Instance, token: str | None, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One JSON-RPC request as raw JSON (json.dumps writes NaN and Infinity as bare words)."""
    body = body or {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    request = urllib.request.Request(f"{server.url}/mcp", data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return (
                response.status,
                {k.lower(): v for k, v in response.headers.items()},
                json.loads(response.read(), parse_constant=_no_constant),
            )
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, json.loads(err.read())


def _no_constant(constant: str) -> None:
    raise AssertionError(f"{constant} in an answer: not JSON")


def test_mcp_refuses_nan_infinity_and_integers_past_2_53_sent_on_the_wire_naming_the_argument(server):
    def append(meta_json: str) -> dict[str, Any]:
        turn = {"role": "user", "text": "numbers", "meta": {"a": 0}}
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "append_turns", "arguments": {"session": "wire", "turns": [turn]}},
        }
        raw = json.dumps(body).replace('{"a": 0}', meta_json).encode()
        request = urllib.request.Request(f"{server.url}/mcp", data=raw, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        request.add_header("Authorization", f"Bearer {server.token}")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read(), parse_constant=_no_constant)["result"]

    answers = [append(meta) for meta in ('{"a": NaN}', '{"a": [1, -Infinity]}', f'{{"a": {2**60}}}')]

    not_finite = "must be a finite number (NaN and Infinity are not JSON)"
    assert [(a["isError"], a["structuredContent"]) for a in answers] == [
        (True, {"detail": f"turns[0].meta.a: {not_finite}", "code": "invalid", "field": "turns[0].meta.a"}),
        (
            True,
            {"detail": f"turns[0].meta.a[1]: {not_finite}", "code": "invalid", "field": "turns[0].meta.a[1]"},
        ),
        (
            True,
            {
                "detail": "turns[0].meta.a: is out of range: a number must lie between -9,007,199,254,740,991 "
                "and 9,007,199,254,740,991 (2^53 - 1)",
                "code": "invalid",
                "field": "turns[0].meta.a",
            },
        ),
    ]
    assert [json.loads(a["content"][0]["text"]) for a in answers] == [a["structuredContent"] for a in answers]
    assert server.read("SELECT COUNT(*) FROM memory_session WHERE sid = ?", "wire") == [(0,)]


def test_mcp_without_a_live_token_answers_401_with_the_discovery_header(server):
    revoked = server.manage("create_token", "carol").strip()
    server.manage(
        "shell",
        "-c",
        f"from accounts.models import ApiToken; from accounts import services; "
        f"services.revoke_token(token=ApiToken.objects.get(digest=ApiToken.digest_of({revoked!r})))",
    )

    answers = {
        name: post_mcp(server, token)
        for name, token in {"none": None, "bogus": "otto_nope", "revoked": revoked}.items()
    }
    with urllib.request.urlopen(
        f"{server.url}/.well-known/oauth-protected-resource/mcp", timeout=30
    ) as response:
        metadata = json.loads(response.read())

    metadata_url = f"{server.url}/.well-known/oauth-protected-resource/mcp"
    for name, (status, headers, body) in answers.items():
        assert status == 401, name
        assert body == {
            "detail": "missing or invalid bearer token (Authorization: Bearer <token>)",
            "code": "unauthorized",
        }
        assert headers["www-authenticate"].startswith(
            f'Bearer realm="ottoweb", resource_metadata="{metadata_url}"'
        )
    assert 'error="invalid_token"' in answers["revoked"][1]["www-authenticate"]
    assert metadata["resource"] == f"{server.url}/mcp"
    assert metadata["bearer_methods_supported"] == ["header"]


def test_mcp_stdio_refuses_to_start_without_a_live_token(server):
    server.env.pop("OTTO_TOKEN", None)

    with pytest.raises(RuntimeError, match="set OTTO_TOKEN"):
        server.manage("mcp")


def test_mcp_wrong_tokens_count_toward_the_address_lockout_shared_with_the_rest_api(tmp_path):
    instance = Instance(tmp_path, OTTO_COMPACTION="inline", OTTO_AUTH_ADDRESS_FAILURES="3")
    try:
        instance.start_web(production=True)
        answers = [post_mcp(instance, f"otto_wrong{n}") for n in range(4)]
        rest_status, rest_body = instance.request("GET", "/api/v1/sessions", token="otto_wrong_rest")
        right = post_mcp(instance, instance.token)
    finally:
        instance.close()

    assert [status for status, _, _ in answers] == [401, 401, 429, 429]
    for _, headers, body in answers[2:]:
        assert body["code"] == "throttled"
        assert int(headers["retry-after"]) > 0
    # One count per address, whichever door the wrong token came through.
    assert rest_status == 429 and rest_body["code"] == "throttled"  # type: ignore[index]
    # A right token is never refused for its address's failures.
    assert right[0] == 200
