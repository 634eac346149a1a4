"""Two-stage recall, the pure parts: what an item is indexed as, query terms, rank fusion, and
spending a token budget on passages best-first.

Stage 1 (the caller) compiles the candidates from EVERY live bullet's hash_refs plus the live tiers;
narrowing by ranking bullets first was measured at 5 % coverage (docs/decisions.md) and is not done. Stage 2
ranks those raw items by their own vectors and words and returns the best, each with its neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypeVar

from . import tokens as tok

K = TypeVar("K", bound=Hashable)

# Reciprocal-rank fusion constant (Cormack et al.): damps the head so no one ranker dominates.
RRF_K = 60

_TERM = re.compile(r"[\w]+", re.UNICODE)
STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have he her him his how i if in is it
    its me my of on or our she so than that the their them then there these they this to was we were
    what when where which who whom why will with would you your""".split()
)


@dataclass(frozen=True, slots=True)
class Said:
    """A turn as ranking sees it: its words, and who said it when (for the turn and the one before)."""

    text: str
    role: str
    name: str = ""
    occurred_at: datetime | None = None

    @property
    def speaker(self) -> str:
        return self.name or self.role


# A silence longer than this starts a new sitting: the turn before it is no longer its context.
SITTING_GAP = timedelta(hours=3)


def same_sitting(turn: Said, previous: Said) -> bool:
    """Whether `previous` (the turn just before) belongs to the same sitting as `turn`.

    Turns without a time (older rows, hand-made stores) are taken as one sitting.
    """
    if turn.occurred_at is None or previous.occurred_at is None:
        return True
    return abs(turn.occurred_at - previous.occurred_at) <= SITTING_GAP


def spoken_date(when: datetime) -> str:
    """A time as people write it, in its own offset: "1:56 pm on 8 May, 2023".

    Indexed beside the turn, so a question naming a month, a year or a day finds the turns of that
    day by their words.
    """
    hour = when.hour % 12 or 12
    half = "am" if when.hour < 12 else "pm"
    return f"{hour}:{when.minute:02d} {half} on {when.day} {when:%B}, {when.year}"


def index_context(turn: Said, previous: Said | None) -> str:
    """Words that help find an item without being part of it: speaker, date, and the turn before.

    Many answers are replies that mean nothing without the turn before them; indexing the pair but
    returning (and charging) only the turn itself was the largest single gain measured on LoCoMo.
    """
    parts = [turn.speaker]
    if turn.occurred_at is not None:
        parts.append(spoken_date(turn.occurred_at))
    if previous is not None and previous.text and same_sitting(turn, previous):
        parts.append(previous.text)
    return "\n".join(parts)


# About 100 tokens: LoCoMo's turns fit whole (their median is ~100 characters).
PREVIOUS_CHARS = 400
# The model reads 256 tokens (Gemini's 2,048), far fewer than this many characters; the tokenizer
# reads all it is given before it truncates, and a 1,000,000-character tool output took ≈ 3 s.
DENSE_CHARS = 16_000


def dense_text(turn: Said, previous: Said | None) -> str:
    """What an item's vector is computed from: the turn before (same sitting), then the turn.

    The turn before is cut to PREVIOUS_CHARS: the model reads only its first 256 tokens, and a long
    previous turn (a tool's output) would otherwise push the turn itself out of what it reads.
    """
    if previous is not None and previous.text and same_sitting(turn, previous):
        before = previous.text
        if len(before) > PREVIOUS_CHARS:
            before = before[:PREVIOUS_CHARS] + " …"
        label = f"{previous.name}: " if previous.name else ""
        return f"{label}{before}\n{turn.speaker}: {turn.text[:DENSE_CHARS]}"
    return f"{turn.speaker}: {turn.text[:DENSE_CHARS]}"


def query_terms(query: str, *, drop_stopwords: bool = True) -> list[str]:
    """Lower-cased word tokens of a query, de-duplicated, stop words dropped unless nothing is left."""
    words = [w.lower() for w in _TERM.findall(query)]
    kept = [w for w in words if w not in STOPWORDS] if drop_stopwords else words
    return list(dict.fromkeys(kept or words))


def feedback_terms(texts: Sequence[str], query: str, *, limit: int) -> list[str]:
    """Pseudo-relevance feedback: the words the top hits' texts (best first) share most, new to
    the query. A word counts once per text; a tie goes to the word met first — not to a set's
    order, which changes with each process's string hashing and moved LoCoMo by 0.7 points
    between runs of the same store."""
    asked = set(query_terms(query))
    counts: dict[str, int] = {}
    for text in texts:
        for t in query_terms(text):
            if t not in asked and len(t) > 2:
                counts[t] = counts.get(t, 0) + 1
    return [t for t, _ in sorted(counts.items(), key=lambda kv: -kv[1])[:limit]]


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_any(query: str) -> str:
    """An FTS5 expression matching any of the query's terms (ranked by BM25)."""
    return " OR ".join(_quote(t) for t in query_terms(query))


def fts_all(query: str) -> str:
    """An FTS5 expression requiring every whitespace-separated piece of the query, as a phrase.

    `billing_v2.py failed` becomes "billing_v2 py" AND "failed": exact tokens, in their order.
    """
    phrases = []
    for piece in query.split():
        words = [w.lower() for w in _TERM.findall(piece)]
        if words:
            phrases.append(_quote(" ".join(words)))
    return " AND ".join(dict.fromkeys(phrases))


def tsquery_any(query: str) -> str:
    """A PostgreSQL tsquery ('simple' config) matching any of the query's terms."""
    return " | ".join(_lexemes(query))


def tsquery_all(query: str) -> str:
    """A PostgreSQL tsquery requiring every whitespace-separated piece as a phrase."""
    phrases = []
    for piece in query.split():
        words = _lexemes(piece, drop_stopwords=False)
        if words:
            phrases.append("(" + " <-> ".join(words) + ")" if len(words) > 1 else words[0])
    return " & ".join(dict.fromkeys(phrases))


def _lexemes(text: str, *, drop_stopwords: bool = True) -> list[str]:
    # PostgreSQL's parser splits on underscores too; quoting each word keeps tsquery syntax out.
    words = [w for t in query_terms(text, drop_stopwords=drop_stopwords) for w in t.split("_") if w]
    return ["'" + w.replace("'", "''") + "'" for w in dict.fromkeys(words)]


def rrf(
    rankings: Sequence[Sequence[K]], *, weights: Sequence[float] | None = None, k: int = RRF_K
) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion of several best-first rankings: best first, with fused scores."""
    scores: dict[K, float] = {}
    for index, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[index]
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank + 1)
    return sorted(scores.items(), key=lambda kv: (-kv[1], str(kv[0])))


@dataclass(slots=True)  # not frozen: a recall builds hundreds, and frozen ones cost 4× as much
class Turn:
    kind: str
    position: int
    role: str
    text: str
    hash: str
    tokens: int


@dataclass(slots=True)
class PassageTurn:
    turn: Turn
    hit: bool = False
    text: str = ""
    truncated: bool = False
    tokens: int = 0


@dataclass(slots=True)
class Passage:
    kind: str
    score: float
    turns: list[PassageTurn] = field(default_factory=list)

    @property
    def positions(self) -> set[int]:
        return {t.turn.position for t in self.turns}


def assemble(
    hits: Sequence[tuple[str, int, float]],
    turns: Mapping[tuple[str, int], Turn],
    *,
    window: int,
    max_tokens: int,
    max_passages: int,
) -> tuple[list[Passage], int]:
    """Spend `max_tokens` best hit first; then give the passages their neighbours with what is left.

    Hits come first because a better hit is worth more than a neighbour of an earlier one (on
    LoCoMo, neighbours taken before further hits cost coverage). A turn is never charged twice: a
    hit next to a returned turn joins that passage. A hit that does not fit is skipped, except the
    best one, which is cut to fit and marked truncated — so `tokens <= max_tokens` always holds.
    """
    passages: list[Passage] = []
    owner: dict[tuple[str, int], Passage] = {}
    spent = 0
    for kind, position, score in hits:
        key = (kind, position)
        hit = turns.get(key)
        if hit is None or key in owner:
            continue
        joined = owner.get((kind, position - 1)) or owner.get((kind, position + 1))
        if joined is None and len(passages) >= max_passages:
            continue
        room = max_tokens - spent
        if hit.tokens <= room:
            entry = PassageTurn(turn=hit, hit=True, text=hit.text, tokens=hit.tokens)
        elif not passages and room > 0:
            cut = tok.truncate_to_tokens(hit.text, room)
            entry = PassageTurn(turn=hit, hit=True, text=cut, truncated=True, tokens=tok.count_tokens(cut))
        else:
            continue
        passage = joined or Passage(kind=kind, score=score)
        if joined is None:
            passages.append(passage)
        passage.turns.append(entry)
        owner[key] = passage
        spent += entry.tokens
    for distance in range(1, window + 1):
        for passage in list(passages):
            for entry in [e for e in passage.turns if e.hit]:
                hit = entry.turn
                for neighbour_position in (hit.position - distance, hit.position + distance):
                    nkey = (passage.kind, neighbour_position)
                    neighbour = turns.get(nkey)
                    if neighbour is None or nkey in owner or neighbour.tokens > max_tokens - spent:
                        continue
                    passage.turns.append(
                        PassageTurn(turn=neighbour, text=neighbour.text, tokens=neighbour.tokens)
                    )
                    owner[nkey] = passage
                    spent += neighbour.tokens
    for passage in passages:
        passage.turns.sort(key=lambda t: t.turn.position)
    return passages, spent


def window_positions(hits: Sequence[tuple[str, int, float]], window: int) -> dict[str, set[int]]:
    """Every (kind → positions) the passages of `hits` may need, for one fetch."""
    wanted: dict[str, set[int]] = {}
    for kind, position, _ in hits:
        wanted.setdefault(kind, set()).update(range(max(0, position - window), position + window + 1))
    return wanted
