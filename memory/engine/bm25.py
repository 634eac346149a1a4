"""BM25 over one session's items, held in memory: recall's lexical rankings for meaning.

FTS5 (memory/store.py) is the keyword index of record and answers `match: keyword`. Ranking for
meaning runs two BM25 passes per recall (the question, and the question widened by feedback
words), and FTS5 scores every row that shares a word with them: on a 5,000-turn session with a
working vocabulary that was ≈ 12 ms of a 27 ms recall. The same formula over numpy postings takes
≈ 0.6 ms. It scores what FTS5's bm25() scores — the item's words and its context (speaker, date,
the turn before), equally weighted, k1 1.2, b 0.75 — with the statistics of the session itself.

Words are FTS5's unicode61 tokens (letters, digits and '_', lower-cased, diacritics removed).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """FTS5 unicode61 (remove_diacritics 2, tokenchars '_') tokens of `text`."""
    lowered = text.lower()
    if not lowered.isascii():
        lowered = "".join(c for c in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(c))
    return _WORD.findall(lowered)


class Postings:
    """An immutable BM25 index of documents (id, words); `Index` combines a large one and a tail."""

    def __init__(self, docs: Sequence[tuple[int, Sequence[str]]]) -> None:
        self.ids = np.fromiter((d for d, _ in docs), dtype=np.int64, count=len(docs))
        self.lengths = np.fromiter((len(w) for _, w in docs), dtype=np.float32, count=len(docs))
        rows: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        for row, (_, doc_words) in enumerate(docs):
            counts: dict[str, int] = {}
            for w in doc_words:
                counts[w] = counts.get(w, 0) + 1
            for w, n in counts.items():
                rows.setdefault(w, []).append(row)
                freqs.setdefault(w, []).append(n)
        self.terms = {
            w: (np.asarray(r, dtype=np.int32), np.asarray(freqs[w], dtype=np.float32))
            for w, r in rows.items()
        }

    def __len__(self) -> int:
        return len(self.ids)

    def df(self, term: str) -> int:
        found = self.terms.get(term)
        return 0 if found is None else len(found[0])

    def nbytes(self) -> int:
        return int(
            self.ids.nbytes + self.lengths.nbytes + sum(r.nbytes + f.nbytes for r, f in self.terms.values())
        )


class Index:
    """A session's BM25 index: a main part and a small tail of items added since it was built.

    Appending rebuilds only the tail; when the tail outgrows a tenth of the main part, the two
    are merged, so a turn-by-turn session pays for each item about once.
    """

    def __init__(self, docs: Sequence[tuple[int, Sequence[str]]] = ()) -> None:
        self._docs: list[tuple[int, Sequence[str]]] = list(docs)
        self.main = Postings(self._docs)
        self._tail_start = len(self._docs)
        self.tail = Postings([])
        self._join()

    def _join(self) -> None:
        # What every search needs over main and tail together, computed once per index, not per search.
        self.ids = np.concatenate([self.main.ids, self.tail.ids])
        lengths = np.concatenate([self.main.lengths, self.tail.lengths])
        self.norm = K1 * (1 - B + B * lengths / float(lengths.mean())) if len(lengths) else lengths

    def __len__(self) -> int:
        return len(self._docs)

    def add(self, docs: Iterable[tuple[int, Sequence[str]]]) -> Index:
        """A new index holding these documents too (this one is left as it is for its readers)."""
        grown = Index.__new__(Index)
        grown._docs = self._docs + list(docs)
        if len(grown._docs) - self._tail_start > max(64, len(self.main) // 10):
            grown.main, grown._tail_start = Postings(grown._docs), len(grown._docs)
            grown.tail = Postings([])
        else:
            grown.main, grown._tail_start = self.main, self._tail_start
            grown.tail = Postings(grown._docs[grown._tail_start :])
        grown._join()
        return grown

    def nbytes(self) -> int:
        return self.main.nbytes() + self.tail.nbytes()

    def search(self, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """Document ids that hold any of `terms`, best BM25 first, with their scores."""
        total = len(self)
        if not total:
            return []
        norm = self.norm
        scores = np.zeros(total, dtype=np.float32)
        offset = len(self.main)
        for term in dict.fromkeys(terms):
            df = self.main.df(term) + self.tail.df(term)
            if not df:
                continue
            # FTS5's idf: never below a hair above zero, so a word in most rows still counts a little.
            idf = max(float(np.log((total - df + 0.5) / (df + 0.5))), 1e-6)
            for part, shift in ((self.main, 0), (self.tail, offset)):
                found = part.terms.get(term)
                if found is not None:
                    rows, tf = found
                    rows = rows + shift if shift else rows
                    scores[rows] += idf * tf * (K1 + 1) / (tf + norm[rows])
        matched = int(np.count_nonzero(scores))
        top = min(limit, matched)
        if top == 0:
            return []
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.lexsort((best, -scores[best]))]  # ties: the earlier item first, every run
        return [(int(self.ids[i]), float(scores[i])) for i in best]
