"""MCP tools validate their own arguments strictly (issue 26, item 4): an argument a tool does not
take is refused, nothing is coerced (a boolean or a string is never an id or a number), and every
refusal is the REST API's error body, `{"detail", "code", "field"}`. `recall` takes `since` and
`until`. The server runs in process (the SDK's in-memory client), against the test database.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from mcp import Client

from accounts.models import AuditEntry
from accounts.services import issue_token
from memory.mcp.calls import Caller
from memory.mcp.tools import build_server
from memory.models import Item, ScopedMemory

# The tools run on worker threads with connections of their own: they must see committed rows.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(alice):
    token, _ = issue_token(user=alice, name="mcp")
    return build_server(lambda ctx: Caller(token, "stdio"))


def drive(server, scenario: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await scenario(client)

    # A thread of its own, as in test_mcp.py: no event loop of an earlier test gets in the way.
    with ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(anyio.run, main).result()


async def answer(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), result.structured_content or {}


def calls(server, *requests: tuple[str, dict[str, Any]]) -> list[tuple[bool, dict[str, Any]]]:
    async def scenario(client: Client) -> list[tuple[bool, dict[str, Any]]]:
        return [await answer(client, tool, arguments) for tool, arguments in requests]

    return drive(server, scenario)


def test_forget_note_refuses_a_boolean_a_string_or_a_float_id_and_deletes_nothing(server):
    (_, note), *refusals = calls(
        server,
        ("remember", {"content": "The office door code is 4417.", "conversation_id": "c1"}),
        ("forget_note", {"note_id": True}),
        ("forget_note", {"note_id": "1"}),
        ("forget_note", {"note_id": 1.0}),
    )

    assert (
        refusals
        == [
            (
                True,
                {"detail": "note_id: Input should be a valid integer", "code": "invalid", "field": "note_id"},
            )
        ]
        * 3
    )
    assert list(ScopedMemory.objects.values_list("id", "content")) == [
        (note["id"], "The office door code is 4417.")
    ]


def test_a_tool_refuses_an_argument_it_does_not_take_and_does_nothing(server):
    (_, note), forget, who, pin = calls(
        server,
        ("remember", {"content": "Keep this one.", "conversation_id": "c1"}),
        ("forget_note", {"note_id": 1, "bogus": 1}),
        ("whoami", {"verbose": True}),
        ("append_turns", {"session": "s", "turns": [{"role": "user", "text": "hi", "pin": True}]}),
    )

    assert forget == (True, {"detail": "bogus: unknown argument", "code": "invalid", "field": "bogus"})
    assert who == (True, {"detail": "verbose: unknown argument", "code": "invalid", "field": "verbose"})
    assert pin == (
        True,
        {"detail": "turns[0].pin: unknown argument", "code": "invalid", "field": "turns[0].pin"},
    )
    assert ScopedMemory.objects.filter(pk=note["id"]).exists()
    assert Item.objects.count() == 0


@pytest.mark.parametrize(
    ("tool", "arguments", "field", "words"),
    [
        ("recall", {"session": "s", "query": "hi", "max_tokens": "12"}, "max_tokens", "a valid integer"),
        ("recall", {"session": "s", "query": "hi", "max_tokens": True}, "max_tokens", "a valid integer"),
        ("recall", {"session": "s", "query": 7}, "query", "a valid string"),
        ("list_sessions", {"limit": 2.0}, "limit", "a valid integer"),
        ("pin_turn", {"session": "s", "position": "0"}, "position", "a valid integer"),
        ("pin_turn", {"session": "s", "position": 0, "pinned": "true"}, "pinned", "a valid boolean"),
        ("pin_turn", {"session": "s", "position": 0, "pinned": 1}, "pinned", "a valid boolean"),
        ("list_notes", {"offset": "0"}, "offset", "a valid integer"),
        ("find_related_errors", {"tool": "bash", "error": "e", "limit": False}, "limit", "a valid integer"),
        ("remember", {"content": "x", "conversation_id": 42}, "conversation_id", "a valid string"),
        # The SDK would parse JSON out of a string for a list argument; a tool takes the list itself.
        (
            "append_turns",
            {"session": "s", "turns": '[{"role": "user", "text": "hi"}]'},
            "turns",
            "a valid list",
        ),
        (
            "append_turns",
            {"session": "s", "turns": [{"role": "user", "text": "hi", "pinned": "yes"}]},
            "turns[0].pinned",
            "a valid boolean",
        ),
        (
            "append_turns",
            {"session": "s", "turns": [{"role": "user", "text": "hi", "occurred_at": 1683554160}]},
            "turns[0].occurred_at",
            "ISO 8601",
        ),
    ],
)
def test_no_argument_is_coerced_to_another_type(server, tool, arguments, field, words):
    ((is_error, body),) = calls(server, (tool, arguments))

    assert is_error and (body["code"], body["field"]) == ("invalid", field)
    assert body["detail"].startswith(f"{field}: ") and words in body["detail"], body
    assert Item.objects.count() == 0


@pytest.mark.parametrize(
    ("meta", "field", "words"),
    [
        ({"id": 2**53}, "turns[0].meta.id", "is out of range"),
        ({"ids": [1, -(2**60)]}, "turns[0].meta.ids[1]", "is out of range"),
        ({"big": 1e20}, "turns[0].meta.big", "is out of range"),
        ({"deep": {"er": {"x": 2**64}}}, "turns[0].meta.deep.er.x", "is out of range"),
    ],
)
def test_append_turns_refuses_a_number_outside_the_policy_naming_its_path(server, meta, field, words):
    ((is_error, body),) = calls(
        server, ("append_turns", {"session": "s", "turns": [{"role": "user", "text": "hi", "meta": meta}]})
    )

    assert (is_error, body["code"], body["field"]) == (True, "invalid", field)
    assert body["detail"].startswith(f"{field}: {words}")
    assert Item.objects.count() == 0


def test_append_turns_refuses_line_breaks_controls_and_direction_overrides_in_a_name(server):
    bad = ["Eve\u2028user", "Eve\u2029", "Eve\u0085", "Eve\u009b", "\u202eEve", "Eve\u2066x\u2069"]
    answers = calls(
        server,
        *[
            ("append_turns", {"session": "s", "turns": [{"role": "user", "text": "hi", "name": n}]})
            for n in bad
        ],
        ("append_turns", {"session": "s", "turns": [{"role": "user", "text": "hi", "name": "אדה 👩🏽‍🔬"}]}),
    )

    for (is_error, body), name in zip(answers, bad, strict=False):
        assert (is_error, body["field"]) == (True, "turns[0].name"), name
        assert f"(it holds U+{next(ord(c) for c in name if not c.isalpha()):04X})" in body["detail"]
    assert answers[-1][0] is False
    assert list(Item.objects.values_list("name", flat=True)) == ["אדה 👩🏽‍🔬"]


def test_recall_takes_since_and_until_as_rest_recall_does(server):
    turns = [
        {
            "role": "user",
            "text": f"The kiln reached {900 + n} degrees today.",
            "occurred_at": f"2024-05-0{n}T10:00:00Z",
        }
        for n in range(1, 6)
    ]
    query = {"session": "kiln", "query": "kiln degrees", "match": "keyword"}
    (_, appended), (_, everything), (_, bounded), inverted, garbled = calls(
        server,
        ("append_turns", {"session": "kiln", "turns": turns}),
        ("recall", query),
        ("recall", {**query, "since": "2024-05-02T00:00:00Z", "until": "2024-05-04T13:00:00+02:00"}),
        ("recall", {**query, "since": "2024-05-04T00:00:00Z", "until": "2024-05-02T00:00:00Z"}),
        ("recall", {**query, "since": "yesterday"}),
    )

    def days(found: dict[str, Any]) -> list[str]:
        return sorted(t["occurred_at"][:10] for p in found["results"]["history"] for t in p["turns"])

    assert appended["appended"] == 5
    assert days(everything) == [f"2024-05-0{n}" for n in range(1, 6)]
    assert days(bounded) == ["2024-05-02", "2024-05-03", "2024-05-04"]
    assert inverted == (True, {"detail": "since must be before until", "code": "invalid", "field": "since"})
    assert garbled[0] is True and garbled[1]["field"] == "since"
    assert garbled[1]["detail"] == "since: is not an ISO 8601 time (e.g. 2023-05-08T13:56:00+02:00)"


def test_every_published_input_schema_refuses_additional_properties(server):
    async def scenario(client: Client) -> dict[str, Any]:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    schemas = drive(server, scenario)

    assert {name: schema.get("additionalProperties") for name, schema in schemas.items()} == dict.fromkeys(
        schemas, False
    )
    assert schemas["append_turns"]["$defs"]["Turn"]["additionalProperties"] is False
    assert {"since", "until"} <= set(schemas["recall"]["properties"])


def test_a_refused_argument_is_audited_with_the_status_rest_would_answer(server):
    calls(server, ("forget_note", {"note_id": True}), ("get_context", {"session": "s", "extra": 1}))

    assert list(AuditEntry.objects.order_by("id").values_list("action", "status", "outcome")) == [
        ("mcp forget_note", 422, "refused"),
        ("mcp get_context", 422, "refused"),
    ]


def test_a_turn_time_comes_back_in_the_one_form_the_rest_api_gives(server):
    turn = {"role": "user", "text": "Kiln fired.", "occurred_at": "2023-05-08 13:56:00,5+02:00"}
    _, (is_error, pinned) = calls(
        server,
        ("append_turns", {"session": "k", "turns": [turn]}),
        ("pin_turn", {"session": "k", "position": 0}),
    )

    assert (is_error, pinned["occurred_at"]) == (False, "2023-05-08T13:56:00.500000+02:00")


def test_list_sessions_refuses_a_q_of_only_invisible_characters_as_rest_does(server):
    # It searched for a zero-width space and answered no session.
    (_, appended), (is_error, refused), (_, everything) = calls(
        server,
        ("append_turns", {"session": "billing", "turns": [{"role": "user", "text": "hi"}]}),
        ("list_sessions", {"q": "\u200b"}),
        ("list_sessions", {"q": ""}),
    )

    assert appended["appended"] == 1
    assert (is_error, refused) == (
        True,
        {
            "detail": "q must not be empty: leave it out to list every session, newest first",
            "code": "invalid",
            "field": "q",
        },
    )
    assert everything["count"] == 1
