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
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
# conversation of 5,000 turns uses ≈ 4,000, but tool output can hold any number of identifiers,
# and the vectors are not counted in the keyword cache's budget.
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


# Per postings part (immutable, shared by every Index built on it: bm25.Index.add keeps the main
# part), so a session's words are embedded once per part, and the vectors go when the part does.
_vocabularies: weakref.WeakKeyDictionary[bm25.Postings, Vocabulary] = weakref.WeakKeyDictionary()


def vocabulary(
    part: bm25.Postings, embed: Embed, *, skip: frozenset[str] = frozenset(), limit: int = MAX_WORDS
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
        _vocabularies[part] = found
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
    tail = vocabulary(index.tail, embed, skip=frozenset(index.main.vocab))
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
