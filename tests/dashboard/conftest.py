from __future__ import annotations

import pytest
from django.test import Client

from memory import services
from memory.services import NewItem

SCRIPT = "<script>window.__xss = 1; alert('xss')</script>"


def say(session, *turns: tuple[str, str], kind: str = "history") -> None:
    """Append turns one by one, as an agent would (compaction runs inline when Y overflows)."""
    for role, text in turns:
        services.append_items(session=session, items=[NewItem(role=role, text=text, kind=kind)])


def conversation(n: int, start: int = 0) -> list[tuple[str, str]]:
    return [
        ("user" if i % 2 == 0 else "assistant", f"Turn {i}: we talked about the deploy pipeline, step {i}.")
        for i in range(start, start + n)
    ]


@pytest.fixture
def alice_web(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.fixture
def bob_web(bob) -> Client:
    client = Client()
    client.force_login(bob)
    return client


@pytest.fixture
def compacted(alice):
    """Alice's session "deploys": small budgets, 40 turns, so Y has been compacted at least once."""
    session = services.create_session(
        user=alice, sid="deploys", title="Deploy rules", workspace="ops", x_budget=60, y_budget=200
    )
    say(session, ("user", "Never deploy on Fridays; ERR_QUOTA_7731 means the build cache is full."))
    say(session, *conversation(40, start=1))
    return session
