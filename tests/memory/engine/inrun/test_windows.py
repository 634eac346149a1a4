"""Model windows (memory/engine/inrun/windows.py): names, the bundled table, learned limits. No
database."""

from __future__ import annotations

import pytest

from memory.engine import inrun
from memory.engine.inrun import (
    MemoryLearnedStore,
    WindowRegistry,
)


def test_normalize_model_requires_a_vendor_and_lowercases():
    assert inrun.normalize_model(" OpenAI:GPT-4o ") == "openai:gpt-4o"
    for bad in ("gpt-4o", ":gpt-4o", "openai:", "open ai:gpt", "x" * 201 + ":m"):
        with pytest.raises(ValueError, match="vendor:model"):
            inrun.normalize_model(bad)


def test_registry_answers_from_the_bundled_table_then_128k():
    registry = WindowRegistry()

    assert [registry.lookup(m) for m in ("openai:gpt-4o", "anthropic:claude-sonnet-4", "acme:unknown")] == [
        inrun.WindowInfo("openai:gpt-4o", 128000, "table"),
        inrun.WindowInfo("anthropic:claude-sonnet-4", 200000, "table"),
        inrun.WindowInfo("acme:unknown", 128000, "default"),
    ]
    assert registry.lookup("google:gemini-2.5-pro").window == 1048576
    assert registry.lookup("mercury:mercury-2.5").window == 260000
    assert registry.lookup("deepseek:deepseek-flash").window == 1048576
    # A dated id takes its family's entry; the longest family wins.
    assert registry.lookup("anthropic:claude-sonnet-4-20250514").window == 200000
    assert registry.lookup("openai:gpt-4-0613").window == 8192
    assert registry.lookup("openai:gpt-4o-mini-2024-07-18") == inrun.WindowInfo(
        "openai:gpt-4o-mini-2024-07-18", 128000, "table"
    )


def test_registry_learned_limit_replaces_only_a_smaller_value_and_persists():
    store = MemoryLearnedStore()
    registry = WindowRegistry(learned=store)

    assert registry.learn("openai:gpt-4o", 200000) is False  # larger than the table: the table stands
    assert registry.learn("openai:gpt-4o", 8192) is True
    assert registry.learn("openai:gpt-4o", 16000) is False  # larger than what was learned
    assert registry.learn("acme:unknown", 300000) is True  # stands in for a model the table lacks
    assert registry.learn("openai:gpt-4o", 100) is False  # not a real model's limit

    again = WindowRegistry(learned=store)
    assert again.lookup("openai:gpt-4o") == inrun.WindowInfo("openai:gpt-4o", 8192, "learned")
    assert again.lookup("acme:unknown") == inrun.WindowInfo("acme:unknown", 300000, "learned")
    listed = {i.model: (i.window, i.source) for i in again.listing()}
    assert listed["openai:gpt-4o"] == (8192, "learned")
    assert listed["acme:unknown"] == (300000, "learned")
    assert listed["anthropic:claude-sonnet-4"] == (200000, "table")


def test_parse_table_reads_the_shapes_a_table_service_publishes():
    assert inrun.parse_table({"OpenAI:gpt-4o": 64000, "bad": 3, "x:y": "no"}) == {"openai:gpt-4o": 64000}
    assert inrun.parse_table({"openai": {"gpt-4o": {"context_window": 64000}}}) == {"openai:gpt-4o": 64000}
    assert inrun.parse_table(
        {
            "models": [
                {"vendor": "acme", "model": "m1", "max_input_tokens": 32000},
                {"id": "acme:m2", "window": 9000},
            ]
        }
    ) == {"acme:m1": 32000, "acme:m2": 9000}
