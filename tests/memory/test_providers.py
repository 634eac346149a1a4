"""Hosted models through their real client libraries, against local stub servers (memory/providers.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from memory import providers
from memory.engine.embeddings import EmbeddingUnavailable, build
from memory.engine.prompt import SourceItem
from memory.providers import GeminiBackend
from tests.stubs import SlowChat, StubServer, gemini_embeddings


def test_gemini_embeds_through_google_genai_against_a_local_stub(monkeypatch):
    with StubServer(gemini_embeddings) as stub:
        backend = GeminiBackend(
            name="gemini:gemini-embedding-001",
            model="gemini-embedding-001",
            dim=8,
            api_key="k",
            base_url=stub.url,
        )
        documents = backend.embed_documents(["alpha", "beta"])
        query = backend.embed_query("alpha")
        queries = backend.embed_queries(["alpha", "beta"])

    paths = [p for p, _, _ in stub.requests]
    bodies = [b for _, b, _ in stub.requests]
    assert documents.shape == (2, 8)
    assert np.allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert np.allclose(query, documents[0], atol=1e-6)
    assert all("gemini-embedding-001" in p for p in paths)
    assert [r.get("taskType") for r in bodies[0]["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert bodies[1]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"
    # Several questions: one request, each a query.
    assert queries.shape == (2, 8) and len(stub.requests) == 3
    assert [r.get("taskType") for r in bodies[2]["requests"]] == ["RETRIEVAL_QUERY"] * 2


def test_gemini_network_failure_is_embedding_unavailable():
    backend = GeminiBackend(name="gemini:x", model="x", api_key="k", base_url="http://127.0.0.1:9")

    with pytest.raises(EmbeddingUnavailable) as failure:
        backend.embed_query("hello")
    assert str(failure.value).startswith("gemini embedding failed:")


def test_gemini_without_a_key_is_unavailable(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(EmbeddingUnavailable, match="GEMINI_API_KEY"):
        GeminiBackend(name="gemini:x", model="x").embed_query("hello")


def test_the_engine_builds_a_gemini_backend_once_providers_registered_it():
    backend = build("gemini:gemini-embedding-001")
    assert isinstance(backend, GeminiBackend)
    assert backend.model == "gemini-embedding-001"


WHO_AND_WHEN = [
    SourceItem(
        1,
        "user",
        "I adopted a grey cat called Miso yesterday.",
        "Caroline",
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
    ),
    SourceItem(2, "bullet", "7 May 2023 · Melanie: ran a charity race"),
]


def gemini_chat(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Gemini's generateContent wire format: a reply citing every item."""
    return 200, {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "- 8 May 2023 · Caroline: adopted Miso [sources: 1, 2]"}],
                }
            }
        ]
    }


def test_the_openai_compatible_summariser_is_told_who_said_what_when_and_the_room():
    with StubServer(SlowChat()) as stub:
        reply = providers.summarizer(f"openai:{stub.url}/v1#stub")(WHO_AND_WHEN, budget=120)

    prompt = stub.requests[0][1]["messages"][-1]["content"]
    assert "[1] (user · Caroline · 8 May 2023) I adopted a grey cat called Miso yesterday." in prompt
    assert "[2] (bullet) 7 May 2023 · Melanie: ran a charity race" in prompt
    assert "within about 120 tokens" in prompt
    assert "[sources: 1]" in reply


def test_the_gemini_summariser_is_told_who_said_what_when_and_the_room(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    with StubServer(gemini_chat) as stub:
        reply = providers.gemini("gemini-2.5-flash", base_url=stub.url)(WHO_AND_WHEN, budget=90)

    path, body, _ = stub.requests[0]
    prompt = " ".join(p["text"] for c in body["contents"] for p in c["parts"])
    assert "gemini-2.5-flash:generateContent" in path
    assert "[1] (user · Caroline · 8 May 2023) I adopted a grey cat called Miso yesterday." in prompt
    assert "within about 90 tokens" in prompt
    assert reply == "- 8 May 2023 · Caroline: adopted Miso [sources: 1, 2]"
