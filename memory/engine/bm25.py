"""BM25 over one session's items, held in memory: recall's lexical rankings for meaning.

FTS5 (memory/storage/fts.py) is the keyword index of record and answers `match: keyword`. Ranking for
meaning runs two BM25 passes per recall (the question, and the question widened by feedback
words), and FTS5 scores every row that shares a word with them: on a 5,000-turn session with a
working vocabulary that was ≈ 12 ms of a 27 ms recall. The same formula over numpy postings takes
≈ 0.6 ms. It scores what FTS5's bm25() scores — the item's words and its context (speaker, date,
the turn before), equally weighted, k1 1.2, b 0.75 — with the statistics of the session itself.

Words are FTS5's unicode61 tokens (letters, digits and '_', lower-cased, diacritics removed) for
Latin text; other scripts fold by Python's Unicode tables, which differ from FTS5's in places
(Greek tonos, Hangul, ligatures), the same way for a question and the turns it is matched with.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
_WORD = re.compile(r"\w+")
# Ends one document in a batch: not a word character, so no word holds it, and no query asks for it.
_END = "\x00"
_WORD_OR_END = re.compile(r"\w+|\x00")
# ASCII characters that are not word characters (FTS5's unicode61 keeps letters, digits and '_').
_NOT_WORD = str.maketrans({chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "_" + _END)})


def _fold(text: str) -> str:
    """Lower-cased, diacritics removed (FTS5's remove_diacritics 2)."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    return _FROM_FIRST_MARK.sub(_without_marks, unicodedata.normalize("NFKD", lowered))


# Runs of characters from U+0300 on, the first combining mark: only they can hold one, and most
# text that is not ASCII holds few (a dash, a quote, an accent), so few characters are looked at.
_FROM_FIRST_MARK = re.compile("[\u0300-\U0010ffff]+")


def _without_marks(run: re.Match[str]) -> str:
    return "".join(c for c in run.group() if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    """FTS5 unicode61 (remove_diacritics 2, tokenchars '_') tokens of `text`."""
    return _WORD.findall(_fold(text))


def _token_stream(texts: Sequence[str]) -> tuple[list[int], list[str]]:
    """Every text's words, each text's followed by an end mark, and the order the texts come in.

    In two batches, each in one pass: ASCII texts, the bulk of most sessions, by turning what is
    not a word character into spaces and cutting with `str.split` (a fifth of the time
    `re.findall` takes); the others folded (diacritics) and cut by the word pattern.
    """
    is_ascii = [text.isascii() for text in texts]
    plain = [n for n, a in enumerate(is_ascii) if a]
    other = [n for n, a in enumerate(is_ascii) if not a]
    tokens = _batch(texts, plain).lower().translate(_NOT_WORD).split()
    tokens += _WORD_OR_END.findall(_fold(_batch(texts, other)))
    return plain + other, tokens


def _batch(texts: Sequence[str], chosen: list[int]) -> str:
    """The chosen texts in one string, each followed by an end mark."""
    batch = "".join(f"{texts[n]} {_END} " for n in chosen)
    if batch.count(_END) > len(chosen):  # a text holding the mark itself: there it is no end
        batch = "".join(f"{texts[n].replace(_END, ' ')} {_END} " for n in chosen)
    return batch


class Postings:
    """An immutable BM25 index of documents, the postings of every term in one array sorted by
    term then row (`starts` says where each term's begin); `Index` combines a large one and a tail.

    Built from a whole batch at once: the batch's words cut in one pass and numbered by a dict,
    then numpy sorts (term, row) pairs and counts them. Per-document Python loops took ≈ 8 s
    for 50,000 turns (a session's first recall waited for it); this takes a small part of that.
    """

    def __init__(
        self,
        ids: np.ndarray,
        lengths: np.ndarray,
        vocab: dict[str, int],
        terms: np.ndarray,
        rows: np.ndarray,
        tf: np.ndarray,
    ) -> None:
        # `terms`, `rows`, `tf`: one entry per (term, document) pair, sorted by term then row.
        self.ids, self.lengths, self.vocab = ids, lengths, vocab
        self.rows, self.tf = rows, tf
        self.starts = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(vocab)), out=self.starts[1:])

    @classmethod
    def of(cls, docs: Sequence[tuple[int, str]]) -> Postings:
        """The postings of documents given as (id, text)."""
        ids = np.fromiter((d for d, _ in docs), dtype=np.int64, count=len(docs))
        order, tokens = _token_stream([text for _, text in docs])
        vocab = {w: n for n, w in enumerate(dict.fromkeys(tokens))}
        numbered = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        ends = numbered == vocab.get(_END, -1)
        # The document each word is in: how many ends came before it, in the stream's order.
        row_of = np.asarray(order, dtype=np.int64)[np.cumsum(ends)[~ends]] if order else np.zeros(0, np.int64)
        numbered = numbered[~ends]
        lengths = np.bincount(row_of, minlength=len(docs)).astype(np.float32)
        size = max(len(docs), 1)
        pairs, counts = np.unique(numbered * size + row_of, return_counts=True)
        terms, rows = np.divmod(pairs, size)
        return cls(ids, lengths, vocab, terms, rows.astype(np.int32), counts.astype(np.float32))

    @classmethod
    def merged(cls, first: Postings, then: Postings) -> Postings:
        """One index of both, `then`'s documents after `first`'s."""
        vocab = dict(first.vocab)
        renumber = np.fromiter(
            (vocab.setdefault(w, len(vocab)) for w in then.vocab), dtype=np.int64, count=len(then.vocab)
        )
        terms = np.concatenate([first._terms(), renumber[then._terms()]])
        order = np.argsort(terms, kind="stable")  # stable: within a term, `first`'s rows stay first
        rows = np.concatenate([first.rows, then.rows + len(first)])
        tf = np.concatenate([first.tf, then.tf])
        ids = np.concatenate([first.ids, then.ids])
        lengths = np.concatenate([first.lengths, then.lengths])
        return cls(ids, lengths, vocab, terms[order], rows[order], tf[order])

    def _terms(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.vocab), dtype=np.int64), np.diff(self.starts))

    def __len__(self) -> int:
        return len(self.ids)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows holding `term` and how often each does."""
        n = self.vocab.get(term)
        if n is None:
            return None
        start, end = self.starts[n], self.starts[n + 1]
        return (self.rows[start:end], self.tf[start:end]) if end > start else None

    def df(self, term: str) -> int:
        n = self.vocab.get(term)
        return 0 if n is None else int(self.starts[n + 1] - self.starts[n])

    def nbytes(self) -> int:
        arrays = (self.ids, self.lengths, self.rows, self.tf, self.starts)
        # A dict entry and a short str object cost ≈ 100 bytes together.
        return int(sum(a.nbytes for a in arrays) + 100 * len(self.vocab))


class Index:
    """A session's BM25 index: a main part and a small tail of items added since it was built.

    Appending merges the new items into the tail; when the tail outgrows a tenth of the main part,
    it is merged into the main part, so a turn-by-turn session pays for each item about once.
    """

    def __init__(self, docs: Sequence[tuple[int, str]] = ()) -> None:
        self.main = Postings.of(docs)
        self.tail = Postings.of([])
        self._join()

    def _join(self) -> None:
        # What every search needs over main and tail together, computed once per index, not per search.
        self.ids = np.concatenate([self.main.ids, self.tail.ids])
        lengths = np.concatenate([self.main.lengths, self.tail.lengths])
        self.norm = K1 * (1 - B + B * lengths / float(lengths.mean())) if len(lengths) else lengths

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, docs: Sequence[tuple[int, str]]) -> Index:
        """A new index holding these documents (id, text) too (this one is left as it is for its readers)."""
        grown = Index.__new__(Index)
        grown.main, grown.tail = self.main, Postings.merged(self.tail, Postings.of(docs))
        if len(grown.tail) > max(64, len(grown.main) // 10):
            grown.main, grown.tail = Postings.merged(grown.main, grown.tail), Postings.of([])
        grown._join()
        return grown

    def nbytes(self) -> int:
        return self.main.nbytes() + self.tail.nbytes()

    def df(self, term: str) -> int:
        """How many documents hold `term` (a word as `words` gives it)."""
        return self.main.df(term) + self.tail.df(term)

    def search(
        self, terms: Sequence[str], limit: int, among: npt.NDArray[np.int64] | None = None
    ) -> list[tuple[int, float]]:
        """Document ids that hold any of `terms`, best BM25 first, with their scores.

        `among`: only these document ids may be returned (the word statistics stay the whole
        index's, as they would be in FTS5 with a filter)."""
        total = len(self)
        if not total:
            return []
        norm = self.norm
        scores = np.zeros(total, dtype=np.float32)
        offset = len(self.main)
        for term in dict.fromkeys(terms):
            df = self.df(term)
            if not df:
                continue
            # FTS5's idf: never below a hair above zero, so a word in most rows still counts a little.
            idf = max(float(np.log((total - df + 0.5) / (df + 0.5))), 1e-6)
            for part, shift in ((self.main, 0), (self.tail, offset)):
                found = part.postings(term)
                if found is not None:
                    rows, tf = found
                    rows = rows + shift if shift else rows
                    scores[rows] += idf * tf * (K1 + 1) / (tf + norm[rows])
        if among is not None:
            scores[~np.isin(self.ids, among)] = 0.0
        matched = int(np.count_nonzero(scores))
        top = min(limit, matched)
        if top == 0:
            return []
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.lexsort((best, -scores[best]))]  # ties: the earlier item first, every run
        return [(int(self.ids[i]), float(scores[i])) for i in best]
