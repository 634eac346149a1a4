"""Query expansion from static word vectors: the session's own words that are near the question's.

The misses LoCoMo leaves are of one kind: a question names a category or a form of a word ("What
activities…", "Where has Melanie camped?") and the evidence turns say something else ("camping",
"campfire", "pottery"), which BM25 cannot match and MiniLM ranks low. WordLlama's static
vectors (docs/recall.md, the `wordllama` model; its weights ship in the wheel) put such words near
each other at almost no cost: each word of the session's keyword index is embedded once, and a
question's words are compared with all of them by one matrix product. The words found make one
more BM25 ranking, of those words alone, fused with the others (memory/recall.py).

Measured on the LoCoMo dev split (docs/evaluation.md): leave-two-out mean 86.4 % → 88.3 %,
multi-hop 56.3 % → 62.0 %; a plateau over threshold 0.25–0.4, 3–12 words a term, weight 0.5–1.5.
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import numpy.typing as npt

from . import bm25
from .retrieval import STOPWORDS

# A word of the question reaches a word of the session at this cosine (WordLlama l2_supercat_256:
# "books"/"novel" 0.53, "pets"/"dog" 0.40, "trip"/"camping" 0.22).
THRESHOLD = 0.3
# At most this many session words per question word, nearest first.
PER_TERM = 8
# Words in more than this share of the session's items say nothing (BM25 would weigh them ≈ 0).
MAX_DF = 0.05
# At most this many words of a postings part get a vector (≈ 20 MB), its commonest: a
# conversation of 5,000 turns uses ≈ 4,000, but tool output can hold any number of identifiers
# (all parts' vectors together stay within VOCABULARY_BYTES).
MAX_WORDS = 20_000
# Session words worth a vector: three letters or more, not a stop word (numbers, ids and
# fragments would only add noise and memory: a vector is 1 KB).
_CANDIDATE = re.compile(r"[a-z]{3,}")

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class Vocabulary:
    """One postings part's candidate words and their unit vectors (one row each)."""

    words: list[str]
    vectors: npt.NDArray[np.float32]


# Every vocabulary a process holds, together: ≈ 1 KB a word, so ≈ 32,000 words (a conversation
# of 5,000 turns has ≈ 4,000). Past it, the least recently used go first; one that is asked for
# again is embedded again (≈ 0.1 s for 4,000 words).
VOCABULARY_BYTES = 32 * 1024 * 1024


class _Vocabularies:
    """The vocabularies of postings parts (immutable, shared by every Index built on one:
    bm25.Index.add keeps the main part), so a session's words are embedded once per part. An
    entry goes when its part does (a weak reference) or when the byte budget needs the room.
    Recalls on several web threads share it: a lock guards every change."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.held: OrderedDict[int, tuple[weakref.ref[bm25.Postings], Vocabulary]] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def get(self, part: bm25.Postings) -> Vocabulary | None:
        with self._lock:
            entry = self.held.get(id(part))
            if entry is None or entry[0]() is not part:
                return None
            self.held.move_to_end(id(part))
            return entry[1]

    def put(self, part: bm25.Postings, vocabulary: Vocabulary) -> None:
        with self._lock:
            key = id(part)
            self._drop(key)
            self.held[key] = (weakref.ref(part, partial(self._gone, key)), vocabulary)
            self.bytes += vocabulary.vectors.nbytes
            while self.bytes > self.budget and len(self.held) > 1:
                self._drop(next(iter(self.held)))

    def _gone(self, key: int, ref: weakref.ref[bm25.Postings]) -> None:
        """A part was freed: its entry goes with it (its id may be reused by a new part)."""
        with self._lock:
            entry = self.held.get(key)
            if entry is not None and entry[0] is ref:
                self._drop(key)

    def _drop(self, key: int) -> None:
        entry = self.held.pop(key, None)
        if entry is not None:
            self.bytes -= entry[1].vectors.nbytes


_vocabularies = _Vocabularies(VOCABULARY_BYTES)


def vocabulary(
    part: bm25.Postings, embed: Embed, *, skip: Container[str] = frozenset(), limit: int = MAX_WORDS
) -> Vocabulary:
    """The part's candidate words (minus `skip`; the `limit` commonest) with their vectors,
    computed on first use."""
    found = _vocabularies.get(part)
    if found is None:
        words = sorted(
            w for w in part.vocab if _CANDIDATE.fullmatch(w) and w not in STOPWORDS and w not in skip
        )
        if len(words) > limit:
            words = sorted(sorted(words, key=lambda w: -part.df(w))[:limit])
        vectors = np.asarray(embed(words), dtype=np.float32) if words else np.zeros((0, 1), np.float32)
        found = Vocabulary(words, vectors)
        _vocabularies.put(part, found)
    return found


def expand(
    terms: Sequence[str],
    index: bm25.Index,
    embed: Embed,
    *,
    asked: set[str],
    threshold: float = THRESHOLD,
    per_term: int = PER_TERM,
    max_df: float = MAX_DF,
) -> list[str]:
    """Words of `index` near any of `terms` (cosine ≥ threshold, at most `per_term` each), none
    of them in `asked` (the question's own words) nor in more than `max_df` of the items."""
    terms = [t for t in terms if _CANDIDATE.fullmatch(t)]
    if not terms or not len(index):
        return []
    main = vocabulary(index.main, embed)
    # The tail (items added since the main part was built) is small; its words already in the
    # main part are not embedded twice.
    tail = vocabulary(index.tail, embed, skip=index.main.vocab)
    words = main.words + tail.words
    if not words:
        return []
    vectors = np.concatenate([main.vectors, tail.vectors]) if tail.words else main.vectors
    limit = len(index) * max_df
    chosen: dict[str, None] = {}
    # einsum, not `@`: OpenBLAS splits `@` over threads, which on a busy 2-core machine wait for
    # the cores (14,000 words × 4 terms: 8-30 ms against 2 ms for einsum's one thread).
    similarity = np.einsum("ij,kj->ki", vectors, np.asarray(embed(terms), dtype=np.float32))
    for row in similarity:
        # Enough nearest words to still have `per_term` after skipping asked and common ones.
        look = min(len(words), per_term * 4 + 10)
        nearest = np.argpartition(-row, look - 1)[:look]
        nearest = nearest[np.lexsort((nearest, -row[nearest]))]  # ties: the earlier word, every run
        taken = 0
        for n in nearest:
            if row[n] < threshold or taken >= per_term:
                break
            word = words[n]
            if word in asked or index.main.df(word) + index.tail.df(word) > limit:
                continue
            chosen[word] = None
            taken += 1
    return list(chosen)
