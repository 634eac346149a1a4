"""The in-memory BM25 recall ranks by scores what FTS5's bm25() scores."""

from __future__ import annotations

import pysqlite3 as sqlite3
import pytest

from memory.engine import bm25
from tests.engine.conftest import synthetic_turns

DOCS = [text for _, text in synthetic_turns(120, seed=21)] + [
    "Café Müller's ERR_QUOTA_7731 came back after the billing_v2 deploy",
    "the quota error again: ERR_QUOTA_7731 on billing",
]
QUERIES = [
    "pottery class schedule",
    "ERR_QUOTA_7731 billing",
    "cafe muller",
    "what did we decide about the deploy",
    "flaky login test, Redis eviction policy and a trip to Lisbon",
]


def fts5_ranking(query_words: list[str]) -> list[tuple[int, float]]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize=\"unicode61 remove_diacritics 2 tokenchars '_'\")"
    )
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", list(enumerate(DOCS)))
    match = " OR ".join(f'"{w}"' for w in query_words)
    rows = db.execute(
        "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid", [match]
    ).fetchall()
    return [(int(r), -float(s)) for r, s in rows]


def test_words_are_fts5_unicode61_tokens():
    assert bm25.words("Café Müller's ERR_QUOTA_7731, naïve-ly") == [
        "cafe",
        "muller",
        "s",
        "err_quota_7731",
        "naive",
        "ly",
    ]


@pytest.mark.parametrize("query", QUERIES)
def test_scores_and_order_match_fts5(query):
    index = bm25.Index([(n, bm25.words(d)) for n, d in enumerate(DOCS)])
    terms = bm25.words(query)

    ours = index.search(terms, limit=1000)
    theirs = fts5_ranking(terms)

    assert theirs, "the query must match something for the comparison to mean anything"
    assert [pk for pk, _ in ours] == [pk for pk, _ in theirs]
    assert [round(s, 4) for _, s in ours] == [round(s, 4) for _, s in theirs]


def test_an_index_grown_by_appends_ranks_as_one_built_at_once():
    docs = [(n, bm25.words(d)) for n, d in enumerate(DOCS)]
    grown = bm25.Index(docs[:20])
    for start in range(20, len(docs), 7):  # small batches: tails, and merges into the main part
        grown = grown.add(docs[start : start + 7])

    whole = bm25.Index(docs)
    for query in QUERIES:
        assert grown.search(bm25.words(query), 50) == whole.search(bm25.words(query), 50)
