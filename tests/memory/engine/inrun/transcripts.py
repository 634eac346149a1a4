"""Transcripts for the in-run tests: seed messages, tool steps, prose, the pairing check."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from memory.engine.inrun import check_transcript

WORDS = (
    "alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega login deploy cache index "
    "router parser schema token window budget session tier chunk bullet"
).split()


def prose(rng: random.Random, words: int) -> str:
    sentences = []
    while words > 0:
        n = min(words, rng.randint(6, 14))
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + ".")
        words -= n
    return " ".join(sentences)


def seed_messages() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the flaky login test in tests/test_login.py."},
    ]


def step(cid: str, name: str, arguments: dict[str, Any], result: str, said: str | None = None) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": said,
            "tool_calls": [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


def assert_paired(messages: Sequence[dict[str, Any]]) -> None:
    check_transcript(messages)
