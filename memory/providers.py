"""Hosted models: the network clients the engine is given but never holds.

- Gemini embeddings (`gemini:<model>` as OTTO_EMBEDDING_MODEL) through google-genai; registered
  with the engine's embedding factory when this module is imported (memory/apps.py does).
- Summarisers named by OTTO_SUMMARIZER: `offline` (the engine's extractive one), `gemini:<model>`,
  or `openai:<base URL>#<model>` for any OpenAI-compatible chat endpoint.

Tested against local stub servers speaking each provider's wire format, through the real client
libraries (tests/memory/test_providers.py, tests/stubs.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .engine import embeddings, summarizers
from .engine.embeddings import Embedder, EmbeddingUnavailable, Vectors, normalise
from .engine.prompt import SourceItem, Summarizer, build_prompt


@dataclass
class GeminiBackend:
    """Gemini embeddings through google-genai; query vs passage is a task type, not a prefix."""

    name: str
    model: str
    dim: int = 768
    api_key: str | None = None
    base_url: str | None = None
    _client: Any = None

    def _load(self) -> Any:
        if self._client is None:
            key = self.api_key or os.environ.get("GEMINI_API_KEY")
            if not key:
                raise EmbeddingUnavailable("gemini embeddings need GEMINI_API_KEY")
            try:
                from google import genai

                options: Any = {"timeout": 20_000}
                if self.base_url or os.environ.get("OTTO_GEMINI_BASE_URL"):
                    options["base_url"] = self.base_url or os.environ["OTTO_GEMINI_BASE_URL"]
                self._client = genai.Client(api_key=key, http_options=options)
            except Exception as exc:
                raise EmbeddingUnavailable(f"google-genai could not start: {exc}") from exc
        return self._client

    def _embed(self, texts: Sequence[str], task: str) -> Vectors:
        client = self._load()
        try:
            from google.genai import types

            vectors: list[list[float]] = []
            for start in range(0, len(texts), 100):
                answer = client.models.embed_content(
                    model=self.model,
                    contents=list(texts[start : start + 100]),
                    config=types.EmbedContentConfig(task_type=task, output_dimensionality=self.dim),
                )
                vectors.extend(list(e.values or []) for e in answer.embeddings or [])
        except Exception as exc:  # network errors are httpx2's or google's own: all mean unavailable
            raise EmbeddingUnavailable(f"gemini embedding failed: {type(exc).__name__}: {exc}") from exc
        if len(vectors) != len(texts):
            raise EmbeddingUnavailable("gemini returned a different number of vectors than texts")
        return normalise(vectors) if vectors else np.zeros((0, self.dim), dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "RETRIEVAL_DOCUMENT")

    def embed_query(self, text: str) -> Vectors:
        return self.embed_queries([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, "RETRIEVAL_QUERY")


def _gemini_embeddings(spec: str) -> Embedder:
    model = spec[len("gemini:") :]
    if not model:
        raise ValueError("gemini: needs a model name")
    return GeminiBackend(name=spec, model=model)


embeddings.HOSTED["gemini:"] = _gemini_embeddings


class SummarizerUnavailable(RuntimeError):
    """A live summariser could not be reached or configured."""


def openai_compatible(
    base_url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0
) -> Summarizer:
    """Any OpenAI-compatible chat endpoint (llama.cpp, Ollama, vLLM, OpenAI) through the openai client."""

    def summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
        from openai import OpenAI

        client = OpenAI(
            base_url=base_url, api_key=api_key or os.environ.get("OPENAI_API_KEY") or "none", timeout=timeout
        )
        answer = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": build_prompt(items, budget)}],
            temperature=0,
        )
        return answer.choices[0].message.content or ""

    return summarize


def gemini(model: str, *, api_key: str | None = None, base_url: str | None = None) -> Summarizer:
    """Gemini through google-genai (GEMINI_API_KEY)."""

    def summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
        from google import genai

        key = api_key or os.environ.get("GEMINI_API_KEY")
        if not key:
            raise SummarizerUnavailable("the gemini summariser needs GEMINI_API_KEY")
        options: Any = {"timeout": 120_000}
        if base_url or os.environ.get("OTTO_GEMINI_BASE_URL"):
            options["base_url"] = base_url or os.environ["OTTO_GEMINI_BASE_URL"]
        client = genai.Client(api_key=key, http_options=options)
        answer = client.models.generate_content(model=model, contents=build_prompt(items, budget))
        return answer.text or ""

    return summarize


def summarizer(spec: str) -> Summarizer:
    """OTTO_SUMMARIZER: `offline`, `gemini:<model>`, or `openai:<base URL>#<model>`."""
    spec = (spec or "offline").strip()
    if spec == "offline":
        return summarizers.offline()
    if spec.startswith("gemini:") and len(spec) > len("gemini:"):
        return gemini(spec[len("gemini:") :])
    if spec.startswith("openai:") and "#" in spec:
        url, _, model = spec[len("openai:") :].rpartition("#")
        if url and model:
            return openai_compatible(url, model)
    raise ValueError(f"unknown summariser {spec!r} (offline, gemini:<model>, openai:<base URL>#<model>)")
