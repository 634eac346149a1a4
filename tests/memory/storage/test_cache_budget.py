"""recall's per-process caches keep to their byte budget, the only session held included."""

from __future__ import annotations

import random

from memory import services
from memory.services import NewItem
from memory.storage import KeywordCache


def tool_output(rng: random.Random, lines: int) -> str:
    # A log: every line holds ids seen nowhere else, so the index's vocabulary grows with the text.
    return "\n".join(f"GET /item/{rng.getrandbits(48):x} req={rng.getrandbits(64):x}" for _ in range(lines))


def test_a_session_whose_keyword_index_outgrows_the_budget_is_not_held(alice):
    rng = random.Random(7)
    session = services.create_session(user=alice, sid="logs")
    services.append_items(
        session=session,
        items=[NewItem(role="tool", kind="context", text=tool_output(rng, 3000)) for _ in range(3)],
    )
    small = services.create_session(user=alice, sid="small")
    services.append_items(session=small, items=[NewItem(role="user", text="deploy on Tuesdays")])
    cache = KeywordCache(budget=300_000)

    fits = cache.get(small.pk, "history")
    too_big = cache.get(session.pk, "context")
    again = cache.get(session.pk, "context")

    assert (fits is not None, too_big, again) == (True, None, None)
    assert 0 < cache.nbytes() <= 300_000
    assert cache.get(small.pk, "history") is fits  # the session that fits is still held


def test_a_recall_of_a_session_too_big_for_the_cache_ranks_by_the_database(alice, alice_api, settings):
    rng = random.Random(8)
    session = services.create_session(user=alice, sid="logs")
    texts = [tool_output(rng, 2000) for _ in range(2)] + ["disk full on /var: ENOSPC while writing the cache"]
    services.append_items(
        session=session, items=[NewItem(role="tool", kind="context", text=t) for t in texts]
    )
    from memory import storage

    storage.keyword_cache.budget = 100_000
    try:
        answer = alice_api.post(
            "/api/v1/sessions/logs/recall", {"query": "ENOSPC disk full", "kind": "context"}
        ).json()
    finally:
        storage.keyword_cache.budget = settings.OTTO_VECTOR_CACHE_MB * 1024 * 1024

    assert answer["results"]["context"][0]["turns"][0]["text"] == texts[2]
    assert storage.keyword_cache.nbytes() == 0
