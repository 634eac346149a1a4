"""Context-length errors as providers word them (memory/engine/inrun/overflow.py). No database."""

from __future__ import annotations

import pytest

from memory.engine.inrun import (
    Overflow,
    parse_overflow,
)


@pytest.mark.parametrize(
    "message, limit, used",
    [
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            8192,
            9000,
        ),
        ("Input exceeds the context window of 8,192 tokens", 8192, None),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200000, 210000),
        (
            "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
            1048576,
            1048577,
        ),
        ("input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000", 200000, 199000),
        (
            "maximum context length is 16385 tokens. However, you requested 17000 tokens "
            "(16000 in the messages, 1000 in the completion).",
            16385,
            16000,
        ),
        ("Request exceeds the limit of 32768 tokens", 32768, None),
        ("rate limited, try again", None, None),
        ("maximum context length is 12 tokens", None, None),
    ],
)
def test_parse_overflow_reads_limit_and_size_from_provider_messages(message, limit, used):
    assert parse_overflow(message) == Overflow(limit=limit, used=used)
