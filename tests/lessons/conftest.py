from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.engine.embeddings import EmbeddingUnavailable
from memory.engine.types import format_moment
from memory.services import embedding

ERRORS = "/api/v1/lessons/errors"
RELATED = "/api/v1/lessons/related"
DAY0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    """How the API writes a timestamp (ISO 8601, Z, microseconds if any: engine.types.format_moment)."""
    return format_moment(moment)


def resolved(tool: str = "bash", error: str = "OSError: [Errno 28] No space left on device", **extra):
    return {"tool": tool, "error": error, "action": "rm -rf build/ && retry", "outcome": "resolved", **extra}


@pytest.fixture
def no_embeddings(monkeypatch):
    """The embedding model cannot be loaded (the process-edge fault error memory must survive)."""

    def unavailable(spec=None):
        raise EmbeddingUnavailable("model files missing (test)")

    monkeypatch.setattr(embedding, "embedder", unavailable)


def recorded(response) -> dict:
    """A record as POST /errors answers it (201, `stored` true), as the other operations give it:
    without `stored`."""
    assert response.status_code == 201, response.content
    answer = response.json()
    assert answer.pop("stored") is True
    return answer
