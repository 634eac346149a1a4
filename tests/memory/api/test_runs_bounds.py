"""POST /runs/fit at and past the bounds of its strings (issue 26): what a run may send, what is refused
with a 422 naming the field, and error messages that name no window a model could have."""

from __future__ import annotations

import pytest

from memory.api.runs import MAX_ARGUMENTS_CHARS, MAX_CONTENT_CHARS
from memory.models import LearnedWindow

pytestmark = pytest.mark.django_db

FIT = "/api/v1/runs/fit"
SEED = [
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Fix the flaky login test."},
]


def with_call(arguments: str) -> list[dict]:
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": arguments}}
    return [
        *SEED,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is " + "9" * 5_000 + " tokens",
        "prompt is too long: " + "2" * 4_400 + " tokens > " + "1" * 4_400 + " maximum",
        "Input exceeds the context window of " + "1,000" * 2_000 + " tokens",
        "1" * 100_000,
    ],
)
def test_an_error_naming_a_window_of_thousands_of_digits_is_answered_and_teaches_nothing(alice_api, message):
    response = alice_api.post(
        FIT,
        {"model": "openai:gpt-4o", "messages": SEED, "error": {"kind": "context_length", "message": message}},
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["window"], body["window_source"], body["learned"]) == (128_000, "table", None)
    assert LearnedWindow.objects.count() == 0


def test_a_window_named_within_the_scanned_start_of_an_error_is_still_learned(alice_api):
    message = "This model's maximum context length is 8192 tokens. " + "1" * 99_000

    response = alice_api.post(
        FIT,
        {"model": "openai:gpt-4o", "messages": SEED, "error": {"kind": "context_length", "message": message}},
    )

    assert response.status_code == 200, response.content
    assert (response.json()["window"], response.json()["learned"]) == (8192, 8192)


def test_arguments_at_their_bound_are_fitted(alice_api):
    response = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "messages": with_call("a" * MAX_ARGUMENTS_CHARS)}
    )

    assert response.status_code == 200, response.content
    assert (
        response.json()["messages"][2]["tool_calls"][0]["function"]["arguments"] == "a" * MAX_ARGUMENTS_CHARS
    )


@pytest.mark.parametrize(
    "messages, field, limit",
    [
        (
            with_call("a" * (MAX_ARGUMENTS_CHARS + 1)),
            "messages.2.tool_calls.0.function.arguments",
            MAX_ARGUMENTS_CHARS,
        ),
        (
            [SEED[0], {"role": "user", "content": "x" * (MAX_CONTENT_CHARS + 1)}],
            "messages.1.content",
            MAX_CONTENT_CHARS,
        ),
        (
            [
                SEED[0],
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "ok"},
                        {"type": "text", "text": "x" * (MAX_CONTENT_CHARS + 1)},
                    ],
                },
            ],
            "messages.1.content.1.text",
            MAX_CONTENT_CHARS,
        ),
    ],
)
def test_a_string_past_its_bound_is_refused_naming_the_field(alice_api, messages, field, limit):
    response = alice_api.post(FIT, {"model": "openai:gpt-4o", "messages": messages})

    assert response.status_code == 422, response.content[:300]
    body = response.json()
    assert (body["field"], body["code"]) == (field, "invalid")
    assert body["detail"] == f"{field}: String should have at most {limit} characters"


def test_content_at_its_bound_is_accepted(alice_api):
    text = "word " * (MAX_CONTENT_CHARS // 5)
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:,"}}]

    response = alice_api.post(
        FIT, {"model": "openai:gpt-4o", "messages": [SEED[0], {"role": "user", "content": parts}]}
    )

    assert response.status_code == 200, response.content[:300]
    assert response.json()["messages"][1]["content"] == parts
