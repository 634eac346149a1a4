from __future__ import annotations

import random

import pytest

TOPICS = [
    "the deploy pipeline",
    "Caroline's pottery class",
    "the flaky login test",
    "a trip to Lisbon",
    "the Postgres migration",
    "Melanie's marathon training",
    "the invoice export bug",
    "adopting a puppy",
    "the quarterly budget",
    "a new sourdough recipe",
    "the Redis eviction policy",
    "a guitar lesson",
]
VERBS = ["finished", "postponed", "discussed", "broke", "fixed", "planned", "reviewed", "cancelled"]


def synthetic_turns(count: int, seed: int = 7) -> list[tuple[str, str]]:
    """Deterministic, varied (role, text) turns, each text unique."""
    rng = random.Random(seed)
    turns = []
    for n in range(count):
        role = "user" if n % 2 == 0 else "assistant"
        topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
        extra = rng.randint(1, 3)
        sentences = [f"Turn {n}: we {verb} {topic} on day {rng.randint(1, 28)}."]
        sentences += [
            f"Note {n}.{k}: {rng.choice(TOPICS)} needs {rng.randint(2, 90)} more minutes."
            for k in range(extra)
        ]
        turns.append((role, " ".join(sentences)))
    return turns


@pytest.fixture
def turns():
    return synthetic_turns
