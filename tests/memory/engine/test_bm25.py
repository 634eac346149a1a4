"""The in-memory BM25 recall ranks by scores what FTS5's bm25() scores."""

from __future__ import annotations

import pysqlite3 as sqlite3
import pytest

from memory.engine import bm25
from tests.memory.engine.conftest import synthetic_turns

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


def test_latin_words_are_what_fts5_indexes():
    # Other scripts fold by Python's Unicode tables, which differ from FTS5's in places (Greek
    # tonos, Hangul, ligatures); questions and turns fold alike, so they still meet.
    texts = [
        "Résumé — “quoted” Ångström, naïve façade; ERR_QUOTA_7731 ḯ Ǻ ơ ư",
        "ascii only: billing-v2 (retry)\ttab",
    ]
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5(body, tokenize=\"unicode61 remove_diacritics 2 tokenchars '_'\")"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", list(enumerate(texts)))
    for n, text in enumerate(texts):
        indexed = db.execute("SELECT term FROM v WHERE doc = ? ORDER BY offset", [n]).fetchall()
        assert bm25.words(text) == [term for (term,) in indexed]


@pytest.mark.parametrize("query", QUERIES)
def test_scores_and_order_match_fts5(query):
    index = bm25.Index(list(enumerate(DOCS)))
    terms = bm25.words(query)

    ours = index.search(terms, limit=1000)
    theirs = fts5_ranking(terms)

    assert theirs, "the query must match something for the comparison to mean anything"
    assert [pk for pk, _ in ours] == [pk for pk, _ in theirs]
    assert [round(s, 4) for _, s in ours] == [round(s, 4) for _, s in theirs]


def test_an_index_grown_by_appends_ranks_as_one_built_at_once():
    docs = list(enumerate(DOCS))
    grown = bm25.Index(docs[:20])
    for start in range(20, len(docs), 7):  # small batches: tails, and merges into the main part
        grown = grown.add(docs[start : start + 7])

    whole = bm25.Index(docs)
    for query in QUERIES:
        assert grown.search(bm25.words(query), 50) == whole.search(bm25.words(query), 50)


def test_a_batch_is_tokenized_as_each_document_alone():
    docs = [
        (7, "Café Müller's ERR_QUOTA_7731"),
        (8, ""),
        (9, "a NUL\x00inside one text, not an end"),
        (10, "Ünïcödé ＦＵＬＬＷＩＤＴＨ naïve"),
        (11, "ERR_QUOTA_7731, billing-v2 (retry)\tTAB\nnext line; it's 3.14"),
        (12, "Ελληνικά και русский текст с ударе́нием, ＦＵＬＬＷＩＤＴＨ 한국어"),
    ]

    postings = bm25.Postings.of(docs)

    assert postings.ids.tolist() == [7, 8, 9, 10, 11, 12]
    assert postings.lengths.tolist() == [len(bm25.words(text)) for _, text in docs]
    for _, text in docs:
        for word in bm25.words(text):
            rows, tf = postings.postings(word)
            expected = [(row, text_.replace("\x00", " ")) for row, (_, text_) in enumerate(docs)]
            holding = [row for row, t in expected if word in bm25.words(t)]
            assert rows.tolist() == holding
            assert tf.tolist() == [bm25.words(expected[row][1]).count(word) for row in holding]
