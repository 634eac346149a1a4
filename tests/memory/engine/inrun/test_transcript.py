"""In-run transcripts (memory/engine/inrun/transcript.py): what is refused, how messages are counted.
No database."""

from __future__ import annotations

import pytest

from memory.engine.inrun import (
    TranscriptError,
    check_transcript,
    message_tokens,
    transcript_tokens,
)
from tests.memory.engine.inrun.transcripts import step


@pytest.mark.parametrize(
    "messages, field, detail",
    [
        ([], "messages", "at least one message"),
        ([{"role": "robot", "content": "hi"}], "messages.0.role", "must be one of"),
        ([{"role": "tool", "content": "x"}], "messages.0.tool_call_id", "needs the id of the call"),
        (
            [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}],
            "messages.1.tool_call_id",
            "answers no call",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                }
            ],
            "messages.0.tool_calls",
            "call 'c1' has no tool result",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "user", "content": "x"},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            "messages.0.tool_calls",
            "call 'c1' has no tool result",
        ),
        ([{"role": "user", "tool_calls": []}], "messages.0.tool_calls", "only an assistant"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1"}]}],
            "messages.0.tool_calls.0.function.name",
            "function name",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {}}}]}],
            "messages.0.tool_calls.0.function.arguments",
            "must be a string",
        ),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "f", "arguments": "{}"}},
                        {"id": "c1", "function": {"name": "g", "arguments": "{}"}},
                    ],
                }
            ],
            "messages.0.tool_calls.1.id",
            "appears twice",
        ),
        ([{"role": "user", "content": 42}], "messages.0.content", "string, null or a list"),
    ],
)
def test_check_transcript_refuses_what_a_provider_would_refuse(messages, field, detail):
    with pytest.raises(TranscriptError) as refused:
        check_transcript(messages)

    assert refused.value.field == field
    assert detail in refused.value.detail


def test_message_tokens_count_content_calls_and_framing():
    plain = {"role": "user", "content": "hello world"}
    calling = step("c1", "read_file", {"path": "a.py"}, "ok")[0]

    assert message_tokens(plain) == 4 + 2
    assert message_tokens(calling) == 4 + 0 + 4 + 2 + 7  # "read_file" is 2 tokens, '{"path": "a.py"}' 7
    assert transcript_tokens([plain, calling]) == 3 + 6 + 17
