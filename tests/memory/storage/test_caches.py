"""The per-process caches recall ranks by (memory/storage/caches.py) — vector matrices, BM25 indexes —
answer as the database would, are never stale, and keep to their byte budget, the only session held
included."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services
from memory.engine.embeddings import WordLlamaBackend, from_blob
from memory.models import Bullet, Item, ItemVector, Session
from memory.recall import recall
from memory.services import NewItem
from memory.storage import (
    Bounds,
    KeywordCache,
    SessionSearch,
    VectorCache,
    bm25_search,
    fts_search,
    items_within,
    keyword_cache,
    vec_search,
    vec_search_each,
    vector_cache,
)
from tests.conftest import built_once, embedded_turns_once
from tests.memory.engine.conftest import synthetic_turns

pytestmark = pytest.mark.django_db

FACT = "The spare key to the allotment shed hangs behind the blue watering can."


@pytest.fixture(scope="module")
def embedded_pk(module_owner, django_db_blocker) -> int:
    return embedded_turns_once(django_db_blocker, module_owner.user, "vc", synthetic_turns(60, seed=8))


@pytest.fixture
def embedded(embedded_pk) -> Session:
    """Sixty turns, embedded, built once for the module and read afresh for each test."""
    return Session.objects.get(pk=embedded_pk)


def query(session, text):
    return services.session_embedder(session).embed_query(text)


def search(session, text, limit=10):
    return vec_search(session.pk, "history", None, query(session, text), limit=limit)


def test_the_matrix_ranks_as_sqlite_vec_does(embedded):
    q = query(embedded, "what did we decide about the pottery class?")
    model = services.session_embedder(embedded).name

    cached = vec_search(embedded.pk, "history", None, q, limit=20)
    in_sqlite_vec = vec_search(embedded.pk, "history", model, q, limit=20)  # a model filter skips the cache

    assert [pk for pk, _ in cached] == [pk for pk, _ in in_sqlite_vec]
    assert [round(s, 4) for _, s in cached] == [round(s, 4) for _, s in in_sqlite_vec]


def test_vectors_written_after_a_search_are_found_by_the_next(embedded):
    search(embedded, "allotment shed key")  # the matrix is now held
    services.append_items(session=embedded, items=[NewItem(role="user", text=FACT)])
    services.embed_items(session=embedded, kind="history")
    fact = Item.objects.get(session=embedded, chunk__text=FACT).pk

    assert search(embedded, "where is the key to the shed?")[0][0] == fact


def test_a_reembed_with_another_model_is_not_ranked_from_the_old_matrix(embedded):
    search(embedded, "pottery")
    services.reembed_session(session=embedded, model=WordLlamaBackend.name)
    embedded.refresh_from_db()

    found = search(embedded, "pottery")
    expected = vec_search(embedded.pk, "history", WordLlamaBackend.name, query(embedded, "pottery"), limit=10)

    assert len(found) == 10 and [pk for pk, _ in found] == [pk for pk, _ in expected]


def test_deleted_vectors_leave_the_matrix(embedded):
    first = search(embedded, "pottery")[0][0]
    ItemVector.objects.filter(item_id=first).delete()

    assert first not in [pk for pk, _ in search(embedded, "pottery", limit=100)]


def test_a_session_too_big_for_the_budget_is_searched_in_sqlite_vec(embedded, monkeypatch):
    q = query(embedded, "pottery")
    model = services.session_embedder(embedded).name
    monkeypatch.setattr(vector_cache, "budget", 10 * 384 * 4)  # room for ten vectors; the session has sixty

    assert VectorCache(budget=10 * 384 * 4).search(embedded.pk, "history", q, 5) is None
    assert [pk for pk, _ in vec_search(embedded.pk, "history", None, q, limit=5)] == [
        pk for pk, _ in vec_search(embedded.pk, "history", model, q, limit=5)
    ]


SINCE_EVER = Bounds(since=datetime(2000, 1, 1, tzinfo=UTC))


def by_numpy(session, rows, limit, among=None):
    """The reference ranking: every vector of the session against each question, in plain numpy."""
    stored = [
        (pk, from_blob(bytes(v)))
        for pk, v in ItemVector.objects.filter(session=session).values_list("item_id", "vector")
        if among is None or pk in among
    ]
    matrix = np.vstack([v for _, v in stored])
    rankings = []
    for row in rows:
        scores = matrix @ row
        rankings.append([(stored[i][0], float(scores[i])) for i in np.argsort(-scores)[:limit]])
    return rankings


@pytest.mark.parametrize(
    "path",
    ["cache", "vector index (a model filter)", "time window, in the cache", "time window, over the budget"],
)
def test_several_questions_are_each_ranked_as_plain_numpy_ranks_them(embedded, monkeypatch, path):
    questions = ["what did we decide about the pottery class?", "where do I keep the shed key?"]
    rows = services.session_embedder(embedded).embed_queries(questions)
    model = None if path.startswith(("cache", "time")) else services.session_embedder(embedded).name
    windowed = path.startswith("time")
    if path.endswith("over the budget"):
        monkeypatch.setattr(vector_cache, "budget", 10 * 384 * 4)  # room for ten vectors of sixty
    # A window holding the last 20 of the 60 turns, and what recall passes with it: their ids.
    turns = Item.objects.filter(session=embedded).order_by("position")
    bounds = Bounds(since=turns[40].occurred_at) if windowed else Bounds()
    among = items_within(embedded.pk, "history", bounds) if windowed else None

    found = vec_search_each(embedded.pk, "history", model, rows, limit=15, bounds=bounds, among=among)
    expected = by_numpy(embedded, rows, 15, None if among is None else set(among.tolist()))

    assert [[pk for pk, _ in r] for r in found] == [[pk for pk, _ in r] for r in expected]
    for got, want in zip(found, expected, strict=True):
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-5)
    assert [pk for pk, _ in found[0]] != [pk for pk, _ in found[1]]
    assert len(found[0]) == 15 and (among is None or len(among) == 20)


def test_a_session_with_no_vectors_gives_an_empty_ranking_per_question(alice):
    session = services.create_session(user=alice, sid="empty-vectors")
    rows = np.ones((2, 384), dtype=np.float32) / np.sqrt(384)

    assert vec_search_each(session.pk, "history", None, rows, limit=5) == [[], []]
    assert vec_search_each(session.pk, "history", None, rows, limit=5, bounds=SINCE_EVER) == [[], []]


def test_one_question_must_come_as_a_row(embedded):
    with pytest.raises(ValueError, match="one row per question"):
        vec_search_each(embedded.pk, "history", None, np.ones(384, dtype=np.float32), limit=5)


def test_a_session_over_the_budget_is_read_once_for_both_questions(embedded, monkeypatch):
    # On PostgreSQL (and in a time window on SQLite) a session too big for the cache is ranked by
    # an exact pass over its vectors: the second question must not read them all again.
    monkeypatch.setattr(vector_cache, "budget", 10 * 384 * 4)
    rows = services.session_embedder(embedded).embed_queries(["pottery", "the shed key"])

    with CaptureQueriesContext(connection) as reads:
        found = vec_search_each(embedded.pk, "history", None, rows, limit=5, bounds=SINCE_EVER)

    vector_reads = [q["sql"] for q in reads.captured_queries if '"memory_itemvector"."vector"' in q["sql"]]
    assert len(found) == 2 and all(len(r) == 5 for r in found)
    assert len(vector_reads) == 1


def keyword_hits(session, text, limit=10):
    return [pk for pk, _ in bm25_search(session.pk, "history", text, limit=limit)]


def test_the_bm25_index_finds_what_fts5_finds(embedded):
    in_fts5 = fts_search(embedded.pk, "history", "pottery class", every=False, limit=1000, context_weight=1.0)

    assert sorted(keyword_hits(embedded, "pottery class", limit=1000)) == sorted(pk for pk, _ in in_fts5)
    assert len(in_fts5) > 5


def test_turns_appended_after_a_ranking_are_in_the_next(embedded):
    keyword_hits(embedded, "allotment shed")  # the index is now held
    services.append_items(session=embedded, items=[NewItem(role="user", text=FACT)])
    fact = Item.objects.get(session=embedded, chunk__text=FACT).pk

    assert keyword_hits(embedded, "allotment shed") == [fact]


def test_a_reset_session_is_not_ranked_from_its_old_index(embedded):
    assert keyword_hits(embedded, "pottery")
    services.reset_session(session=embedded, mode="all")
    services.append_items(session=embedded, items=[NewItem(role="user", text=FACT)])

    assert keyword_hits(embedded, "pottery") == []
    assert keyword_hits(embedded, "watering can") == [Item.objects.get(session=embedded).pk]


def test_a_session_too_big_for_the_keyword_budget_is_ranked_by_fts5(embedded, monkeypatch):
    monkeypatch.setattr(keyword_cache, "budget", 1000)

    assert bm25_search(embedded.pk, "history", "pottery", limit=5) is None
    answer = recall(embedded, query="Caroline's pottery class")
    assert answer["degraded"] is None and answer["results"]["history"]


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


# The candidates' rows (ItemCache, uncited_archived): what the ranking's boosts read of each item


def candidates_from_rows(session, kind, ids, times=True):
    """The candidates as read from the database, the way a recall bounded in time reads them."""
    search = SessionSearch(session.pk, kind, Bounds(since=datetime(2000, 1, 1, tzinfo=UTC)))
    search.times_wanted = times
    return search.candidates(ids)


def candidates_from_cache(session, kind, ids, times=True):
    search = SessionSearch(session.pk, kind)
    search.times_wanted = times
    return search.candidates(ids)


@pytest.fixture(scope="module")
def compacted_pk(module_owner, django_db_blocker) -> int:
    def build() -> int:
        session = services.create_session(user=module_owner.user, sid="cands", x_budget=150, y_budget=450)
        for n, (role, text) in enumerate(synthetic_turns(240, seed=4)):
            name = "Ana" if role == "user" else "Otto"
            when = datetime(2024, 3, 1 + n // 20, 9, n % 60, tzinfo=UTC)
            services.append_items(
                session=session, items=[NewItem(role=role, text=text, name=name, occurred_at=when)]
            )
        services.append_items(
            session=session,
            items=[NewItem(role="tool", text=f"build {n} passed", kind="context") for n in range(30)],
        )
        return session.pk

    return built_once(django_db_blocker, build)


@pytest.fixture
def compacted(compacted_pk) -> Session:
    """History compacted many times over, with names and times, and some tool output in context:
    built once for the module, read afresh for each test."""
    return Session.objects.get(pk=compacted_pk)


def all_ids(session, kind):
    return list(Item.objects.filter(session=session, kind=kind).values_list("pk", flat=True))


def summarised_citing(session, items):
    """As a compaction whose summary cites only `items` writes it: the live bullets superseded, one
    new bullet (a new id: the recall version moves on)."""
    live = Bullet.objects.filter(session=session, kind="history", superseded=False)
    generation = max(b.generation for b in live) + 1
    live.update(superseded=True)
    Bullet.objects.create(
        session=session,
        kind="history",
        generation=generation,
        text="- a summary of part of it",
        hash_refs=[i.chunk.hash for i in items],
        tokens=8,
        first_position=min(i.position for i in items),
    )


@pytest.mark.parametrize("times", [True, False])
def test_the_candidates_from_the_cache_are_the_database_s(compacted, times):
    history = all_ids(compacted, "history")
    archived = list(
        Item.objects.filter(pk__in=history, tier="a").select_related("chunk").order_by("position")
    )
    assert len(archived) > 20 and Item.objects.filter(pk__in=history, tier="x").exists()
    every = candidates_from_cache(compacted, "history", history, times)
    assert every == candidates_from_rows(compacted, "history", history, times)
    summarised_citing(compacted, archived[::3])

    cached = candidates_from_cache(compacted, "history", history, times)
    assert cached == candidates_from_rows(compacted, "history", history, times)
    assert set(every) - set(cached) == {i.pk for i in archived} - {i.pk for i in archived[::3]}
    assert any(c.speaker == "Ana" for c in cached.values())
    assert all((c.when is not None) == times for c in cached.values())
    context = all_ids(compacted, "context")
    assert candidates_from_cache(compacted, "context", context) == candidates_from_rows(
        compacted, "context", context
    )


def test_new_turns_are_candidates_and_a_pin_brings_an_uncited_turn_back(compacted):
    archived = list(
        Item.objects.filter(session=compacted, kind="history", tier="a")
        .select_related("chunk")
        .order_by("position")
    )
    summarised_citing(compacted, archived[1:])
    history = all_ids(compacted, "history")
    before = candidates_from_cache(compacted, "history", history)
    assert archived[0].pk not in before
    for n in range(120):  # more turns, more compactions
        services.append_items(
            session=compacted, items=[NewItem(role="assistant", text=f"step {n} of the plan done")]
        )
    history = all_ids(compacted, "history")

    after = candidates_from_cache(compacted, "history", history)
    assert after == candidates_from_rows(compacted, "history", history)
    assert set(after) - set(before), "the new turns are candidates"

    services.set_pinned(session=compacted, position=archived[0].position)
    pinned = candidates_from_cache(compacted, "history", history)
    assert archived[0].pk in pinned
    assert pinned == candidates_from_rows(compacted, "history", history)


@pytest.mark.parametrize("mode", ["all", "summary"])
def test_a_reset_session_s_candidates_are_what_the_reset_kept(compacted, mode):
    history = all_ids(compacted, "history")
    assert candidates_from_cache(compacted, "history", history)
    services.reset_session(session=compacted, mode=mode)
    services.append_items(session=compacted, items=[NewItem(role="user", text="a fresh start")])
    every = history + [pk for pk in all_ids(compacted, "history") if pk not in history]

    left = candidates_from_cache(compacted, "history", every)
    assert left == candidates_from_rows(compacted, "history", every)
    kept = set(Item.objects.filter(session=compacted, kind="history").values_list("pk", flat=True))
    assert set(left) == kept  # "summary" keeps the cited archived turns, "all" nothing old
    assert (len(kept) > 1) == (mode == "summary")


def test_one_recall_checks_the_items_freshness_once(embedded):
    # The keyword index and the item cache both hold memory_item rows: one recall reads the
    # session's (count, newest id) for both, and still sees turns appended before it.
    recall(embedded, query="the shed key", kind="history")  # both caches built
    services.append_items(session=embedded, items=[NewItem(role="user", text=FACT)])
    services.embed_items(session=embedded, kind="history")

    with CaptureQueriesContext(connection) as reads:
        answer = recall(embedded, query="where is the spare key to the allotment shed?", kind="history")

    freshness = [
        q["sql"] for q in reads.captured_queries if "coalesce(max(id), 0) FROM memory_item " in q["sql"]
    ]
    assert len(freshness) == 1
    hits = [t["text"] for p in answer["results"]["history"] for t in p["turns"] if t["hit"]]
    assert hits[0] == FACT


def vector_table_reads(captured):
    """The vector cache's freshness checks (a count over the vectors' table): PostgreSQL's exact
    search over a session too big for the cache reads the table's rows, which is no such check."""
    return [
        q["sql"]
        for q in captured.captured_queries
        if "memory_itemvector" in q["sql"] and "count(" in q["sql"].lower()
    ]


def test_vectors_read_ahead_of_the_question_rank_as_a_search_that_waits_reads_them(embedded, monkeypatch):
    rows = services.session_embedder(embedded).embed_queries(["where do I keep the shed key?"])
    waited = SessionSearch(embedded.pk, "history", query_vectors=lambda: rows)
    expected = waited.dense(1, 10)
    ahead = SessionSearch(embedded.pk, "history", query_vectors=lambda: rows)

    ahead.read_vectors_ahead(int(rows.shape[1]))
    # Once the question's vectors are in, the search reads nothing more of the session's vectors.
    with CaptureQueriesContext(connection) as after_the_wait:
        found = ahead.dense(1, 10)

    assert vector_table_reads(after_the_wait) == []
    assert found == expected and len(expected) == 1 and len(expected[0]) == 10


def test_vectors_read_ahead_at_another_width_are_read_again_at_the_question_s(embedded):
    rows = services.session_embedder(embedded).embed_queries(["where do I keep the shed key?"])
    expected = SessionSearch(embedded.pk, "history", query_vectors=lambda: rows).dense(1, 10)
    ahead = SessionSearch(embedded.pk, "history", query_vectors=lambda: rows)

    ahead.read_vectors_ahead(256)  # a width no vector of the session has: an empty read

    assert ahead.dense(1, 10) == expected and len(expected[0]) == 10


def test_a_session_found_too_big_ahead_is_searched_in_sqlite_vec_without_asking_the_cache_again(
    embedded, monkeypatch
):
    rows = services.session_embedder(embedded).embed_queries(["where do I keep the shed key?"])
    model = services.session_embedder(embedded).name
    expected = vec_search(embedded.pk, "history", model, rows[0], limit=5)
    monkeypatch.setattr(vector_cache, "budget", 10 * 384 * 4)  # room for ten vectors of sixty
    ahead = SessionSearch(embedded.pk, "history", query_vectors=lambda: rows)

    ahead.read_vectors_ahead(int(rows.shape[1]))
    with CaptureQueriesContext(connection) as after_the_wait:
        found = ahead.dense(1, 5)

    assert vector_table_reads(after_the_wait) == []  # the cache was not asked again
    assert [pk for pk, _ in found[0]] == [pk for pk, _ in expected] and len(expected) == 5
