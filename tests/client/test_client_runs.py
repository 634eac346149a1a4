"""ottoweb_client's in-run compaction against a live production server: fitting a run, the model
windows, and the limits a run's overflow errors taught."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from ottoweb_client import Ottoweb, OttowebError
from ottoweb_client.types import ContextLengthError

from memory.engine.inrun import transcript_tokens

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the client, not the database, is tested


@pytest.fixture(scope="module")
def client(server) -> Ottoweb:
    return Ottoweb(server.url, server.token)


def read_steps(count: int, lines: int) -> list[dict[str, Any]]:
    """A coding run of `count` file reads, each answered with `lines` lines of the file; the first
    file says why the test fails."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the flaky login test."},
    ]
    for n in range(count):
        path = f"src/module_{n}.py"
        found = "The session cookie expires at 09:00, before the login test runs. " if n == 0 else ""
        call = {"name": "read_file", "arguments": json.dumps({"path": path})}
        body = "".join(
            f"{path}:{line}: def check_{line}(token): return token in cache\n" for line in range(lines)
        )
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": call}],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": found + body},
        ]
    return messages


def test_fit_run_brings_an_over_long_run_within_its_budget_and_stores_what_it_took_out(client):
    client.create_session("login-fix")
    messages = read_steps(30, 20)

    fitted = client.fit_run(session="login-fix", model="openai:gpt-4", messages=messages)
    found = client.recall("login-fix", "session cookie expires", kind="context", match="keyword")

    assert fitted["stages"] == ["CheckThreshold", "ToolHistory"]
    assert (fitted["window"], fitted["budget"], fitted["window_source"]) == (8192, 6553, "table")
    assert transcript_tokens(messages) > 6553 >= transcript_tokens(fitted["messages"])
    assert fitted["messages"][:2] == messages[:2]  # the seed
    assert fitted["messages"][-2:] == messages[-2:]  # the latest step
    assert fitted["evicted"] == fitted["stored"] > 0
    hits = [t["text"] for p in found["results"]["context"] for t in p["turns"] if t["hit"]]
    assert "The session cookie expires at 09:00" in hits[0]


def test_fit_run_after_a_context_length_error_trims_the_run_and_learns_the_limit(server):
    client = Ottoweb(server.url, server.manage("create_token", "erin").strip())  # her own limits
    messages = read_steps(40, 12)
    error: ContextLengthError = {
        "kind": "context_length",
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9100 tokens.",
    }

    fitted = client.fit_run(model="openai:gpt-4o", messages=messages, error=error)
    learned = client.model_windows(model="openai:gpt-4o")

    assert fitted["stages"] == ["TrimRatio", "TrimFallback"]
    assert (fitted["window"], fitted["window_source"], fitted["learned"]) == (8192, "learned", 8192)
    assert fitted["tokens"] <= fitted["budget"] == 6553
    assert len(fitted["messages"]) < len(messages)
    assert learned == {"items": [{"model": "openai:gpt-4o", "window": 8192, "source": "learned"}]}


def test_model_windows_lists_the_table_and_answers_one_model(client):
    listed = {i["model"]: (i["window"], i["source"]) for i in client.model_windows()["items"]}
    one = client.model_windows(model="Acme:Thing-1")

    assert listed["openai:gpt-4"] == (8192, "table")
    assert listed["anthropic:claude-sonnet-4"] == (200000, "table")
    assert one == {"items": [{"model": "acme:thing-1", "window": 128000, "source": "default"}]}


def overflow(limit: int) -> ContextLengthError:
    return {
        "kind": "context_length",
        "message": f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {limit + 900} tokens.",
    }


def test_learned_limits_lists_what_a_refusal_taught_and_clearing_one_gives_back_the_table_s(server):
    client = Ottoweb(server.url, server.manage("create_token", "frank").strip())  # his own limits
    messages = read_steps(40, 12)
    before = client.learned_limits()
    taught = datetime.now(UTC)
    client.fit_run(model="openai:gpt-4o", messages=messages, error=overflow(8192))
    client.fit_run(model="acme:thing-1", messages=messages, error=overflow(16384))

    listed = client.learned_limits()
    client.clear_learned_limit(model="OpenAI:GPT-4o")  # names are case-insensitive
    kept = client.learned_limits()
    gpt_4o = client.model_windows(model="openai:gpt-4o")
    client.clear_learned_limit(model="acme:thing-1")
    thing_1 = client.model_windows(model="acme:thing-1")

    assert before == {"items": []}
    assert [(i["model"], i["window"]) for i in listed["items"]] == [
        ("acme:thing-1", 16384),
        ("openai:gpt-4o", 8192),
    ]
    for item in listed["items"]:  # ISO 8601 with its offset, as the answer's other times are
        assert abs(datetime.fromisoformat(item["updated_at"]) - taught) < timedelta(minutes=1)
    assert kept == {"items": [listed["items"][0]]}
    assert gpt_4o == {"items": [{"model": "openai:gpt-4o", "window": 128000, "source": "table"}]}
    assert thing_1 == {"items": [{"model": "acme:thing-1", "window": 128000, "source": "default"}]}
    assert client.learned_limits() == {"items": []}


def test_clearing_a_limit_nobody_taught_is_not_found_in_the_server_s_words(client):
    with pytest.raises(OttowebError) as raised:
        client.clear_learned_limit(model="openai:gpt-4")

    refused = raised.value
    assert (refused.code, refused.status, refused.field) == ("not_found", 404, "model")
    assert refused.detail == "no learned limit for openai:gpt-4"


@pytest.mark.parametrize(
    "call",
    [
        lambda client: client.fit_run(model="gpt-4o", messages=[{"role": "user", "content": "Fix it."}]),
        lambda client: client.model_windows(model="gpt-4o"),
        lambda client: client.clear_learned_limit(model="gpt-4o"),
    ],
    ids=["fit_run", "model_windows", "clear_learned_limit"],
)
def test_a_model_without_a_vendor_is_refused_with_the_server_s_reason(client, call):
    with pytest.raises(OttowebError) as raised:
        call(client)

    refused = raised.value
    assert (refused.code, refused.status, refused.field) == ("invalid", 422, "model")
    assert refused.detail == (
        "model: model must be 'vendor:model' (for example 'openai:gpt-4o'), at most 200 characters; "
        "got 'gpt-4o'"
    )
