"""Issue 15, points 1 and 2: a person's verbatim turns fill at most a share of Y; the oldest leave
the prompt view (kept verbatim in the store, cited by a quote bullet, found by recall)."""

from __future__ import annotations

import random

import pytest

from memory.engine import tokens as tok
from memory.engine.compaction import is_quote
from memory.engine.memstore import InMemoryStore
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize

WORDS = (
    "deploy cache index parser router token window budget tier chunk bullet invoice ledger vendor "
    "schema migration replica queue worker cluster lease shard quota backup restore audit"
).split()
PLANTED = "The staging database password rotates every ninety days under ticket ZEBRA-4471."


def person_turns(count: int, *, seed: int = 15) -> list[str]:
    """`count` distinct person turns of a few hundred tokens each; turn 10 holds PLANTED."""
    rng = random.Random(seed)
    turns = []
    for n in range(count):
        sentences = [
            f"Request {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14))) + "."
            for _ in range(rng.randint(14, 22))
        ]
        if n == 10:
            sentences.insert(3, PLANTED)
        turns.append(" ".join(sentences))
    return turns


def test_queue_of_person_turns_stays_inside_x_plus_y_plus_one_item():
    store = InMemoryStore()
    queue = TieredQueue(
        store, x_budget=400, y_budget=1200, summarize=extractive_summarize, protected_share=0.5
    )
    texts = person_turns(600)
    largest = 0
    for text in texts:
        largest = max(largest, tok.count_tokens(text))
        if queue.append("user", text).needs_compaction:
            queue.compact()
        totals = store.totals("history")
        assert totals.x + totals.y <= 400 + 1200 + largest

    view = queue.current_view()
    cited = {h for b in view.bullets for h in b.hash_refs}
    quotes = [b for b in view.bullets if is_quote(b)]
    verbatim = [b for b in view.bullets if b.protected]
    # The newest person turns are still verbatim in the view, the oldest cited by quotes; every
    # archived turn is cited by a live bullet.
    assert verbatim and verbatim[-1].text in texts
    assert quotes and all(not b.protected and b.role == "user" for b in quotes)
    assert {store.chunks[h] for h in cited} | {i.text for i in (*view.y_raw, *view.x)} == set(texts)


def test_quote_bullets_are_never_shown_to_the_summariser():
    seen: list[str] = []

    def spy(items, budget=None):
        seen.extend(i.text for i in items)
        return extractive_summarize(items, budget)

    store = InMemoryStore()
    queue = TieredQueue(store, x_budget=400, y_budget=1200, summarize=spy, protected_share=0.5)
    texts = person_turns(80)
    for n, text in enumerate(texts):
        queue.append("user", text)
        queue.append("assistant", f"Report {n}: done, the build of step {n} passed and was tagged.")
        queue.compact()

    assert seen
    assert not any(t[:40] in s for t in texts for s in seen)


@pytest.mark.django_db
@pytest.mark.sqlite_pass  # the bound is the engine's and the tiers', the same on both databases
def test_two_thousand_person_turns_over_the_api_keep_the_context_bounded_and_everything_reachable(
    alice_api, alice, client, settings
):
    # What is checked is the bound and the store; the recall below is by keyword. MiniLM embedding
    # 2,000 turns of a few hundred tokens was three quarters of this test's time.
    settings.OTTO_EMBEDDING_MODEL = "wordllama"
    assert (
        alice_api.post("/api/v1/sessions", {"id": "long", "x_budget": 400, "y_budget": 1200}).status_code
        == 201
    )
    texts = person_turns(2000)
    largest = 0
    for text in texts:
        largest = max(largest, tok.count_tokens(text))
        assert (
            alice_api.post("/api/v1/sessions/long/items", {"role": "user", "text": text}).status_code == 201
        )
        context = alice_api.get("/api/v1/sessions/long/context").json()
        assert context["tokens"]["total"] <= 400 + 1200 + largest

    exported = alice_api.get("/api/v1/sessions/long/export").json()
    recalled = alice_api.post(
        "/api/v1/sessions/long/recall", {"query": "ZEBRA-4471 password rotates", "match": "keyword"}
    ).json()

    stored = {c["text"] for c in exported["chunks"]} | {p["text"] for p in exported["pending"]}
    assert stored == set(texts)
    assert context["over_budget"] is False
    assert any(b["quote"] for b in context["bullets"]) and any(b["protected"] for b in context["bullets"])
    hits = [t["text"] for p in recalled["results"]["history"] for t in p["turns"]]
    assert texts[10] in hits
    client.force_login(alice)
    page = client.get("/sessions/long/").content.decode()
    assert "over budget" not in page
    assert "the person’s earlier words" in page


@pytest.mark.django_db
def test_a_sessions_own_protected_share_bounds_its_verbatim_turns(alice_api):
    created = alice_api.post(
        "/api/v1/sessions", {"id": "quarter", "x_budget": 400, "y_budget": 1200, "protected_share": 0.25}
    ).json()
    for text in person_turns(40):
        alice_api.post("/api/v1/sessions/quarter/items", {"role": "user", "text": text})
    alice_api.post("/api/v1/sessions/quarter/memory", {"action": "compact"})

    context = alice_api.get("/api/v1/sessions/quarter/context").json()

    assert created["protected_share"] == 0.25
    assert 0 < context["tokens"]["protected"] <= 300
    assert sum(b["quote"] for b in context["bullets"]) >= 1


@pytest.mark.django_db
@pytest.mark.parametrize("share", [0, 0.01, 1.5, "half"])
def test_a_protected_share_out_of_range_is_refused_and_nothing_is_written(alice_api, share):
    response = alice_api.post("/api/v1/sessions", {"id": "bad", "protected_share": share})

    assert (response.status_code, response.json()["field"]) == (422, "protected_share")
    assert alice_api.get("/api/v1/sessions/bad").status_code == 404


@pytest.mark.django_db
def test_with_no_worker_to_compact_the_view_holds_back_the_oldest_turns_and_stays_within_budget(alice_api):
    from django.test import override_settings

    assert (
        alice_api.post("/api/v1/sessions", {"id": "stuck", "x_budget": 100, "y_budget": 300}).status_code
        == 201
    )
    texts = [
        f"Turn {n}: the assistant reports progress on step {n} of the migration plan." for n in range(120)
    ]
    largest = max(tok.count_tokens(t) for t in texts)
    # Job mode, and no worker runs in this process: every compaction the appends ask for stays queued.
    with override_settings(OTTO_COMPACTION="job"):
        for text in texts:
            answer = alice_api.post("/api/v1/sessions/stuck/items", {"role": "assistant", "text": text})
            assert answer.status_code == 201
            context = alice_api.get("/api/v1/sessions/stuck/context").json()
            assert context["tokens"]["total"] <= 100 + 300 + largest

    recalled = alice_api.post(
        "/api/v1/sessions/stuck/recall", {"query": "progress on step 3 of", "match": "keyword"}
    ).json()

    assert context["held_back"] > 0 and context["tokens"]["held_back"] > 0
    assert context["over_budget"] is False
    shown = [t["text"] for t in context["y_raw"] + context["x"]]
    assert shown == texts[len(texts) - len(shown) :]  # the newest, in order
    assert texts[3] in [t["text"] for p in recalled["results"]["history"] for t in p["turns"]]


@pytest.mark.django_db
def test_while_a_compaction_is_due_one_huge_tool_output_does_not_hold_back_the_persons_instruction(alice_api):
    from django.test import override_settings

    alice_api.post("/api/v1/sessions", {"id": "huge", "x_budget": 300, "y_budget": 800})
    output = "line ok\n" * 270  # larger than Y alone
    assert tok.count_tokens(output) > 800
    with override_settings(OTTO_COMPACTION="job"):  # no worker here: the compaction stays due
        for role, text in [
            ("user", "Never use sudo on this machine."),
            ("assistant", "Understood."),
            ("tool", output),
        ]:
            assert (
                alice_api.post("/api/v1/sessions/huge/items", {"role": role, "text": text}).status_code == 201
            )

    context = alice_api.get("/api/v1/sessions/huge/context").json()

    assert [t["text"] for t in context["y_raw"] + context["x"]] == [
        "Never use sudo on this machine.",
        "Understood.",
    ]
    assert "Never use sudo on this machine." in context["text"]
    assert (context["held_back"], context["over_budget"]) == (1, False)
    assert context["tokens"]["total"] <= 300 + 800


@pytest.mark.django_db
def test_while_a_compaction_is_due_the_persons_turns_are_shown_before_newer_turns_of_the_agent(alice_api):
    from django.test import override_settings

    alice_api.post("/api/v1/sessions", {"id": "first", "x_budget": 300, "y_budget": 800})
    instruction = "Never use sudo on this machine."
    # The agent's answer alone all but fills Y: shown newest first, it would hold the instruction back.
    answer = "Checked the host. " + "The disk is fine. " * 160
    answer = tok.truncate_to_tokens(answer, 800 - tok.count_tokens(instruction) + 2)
    with override_settings(OTTO_COMPACTION="job"):
        for role, text in [("user", instruction), ("assistant", answer), ("tool", "line ok\n" * 270)]:
            assert (
                alice_api.post("/api/v1/sessions/first/items", {"role": role, "text": text}).status_code
                == 201
            )

    context = alice_api.get("/api/v1/sessions/first/context").json()

    assert [t["text"] for t in context["y_raw"] + context["x"]] == [instruction]
    assert context["held_back"] == 2
