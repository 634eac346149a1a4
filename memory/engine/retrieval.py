"""Two-stage recall, the pure parts: what an item is indexed as, query terms, rank fusion, and
spending a token budget on passages best-first.

Stage 1 (the caller) compiles the candidates from EVERY live bullet's hash_refs plus the live tiers;
narrowing by ranking bullets first was measured at 5 % coverage (docs/decisions.md) and is not done. Stage 2
ranks those raw items by their own vectors and words and returns the best, each with its neighbours.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

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


_MONTHS = "january february march april may june july august september october november december".split()
_NAMED_TIME = re.compile(
    r"\b(?:(" + "|".join(_MONTHS) + r")\b(?:\s*,?\s*((?:19|20)\d\d)\b)?|((?:19|20)\d\d)\b)",
    re.IGNORECASE,
)
# "may" alone is nearly always the verb; it names the month with a year or after one of these.
_MAY_THE_MONTH = re.compile(r"\b(?:in|last|of|since|early|late|mid)\s+$", re.IGNORECASE)


def named_times(query: str) -> list[tuple[int | None, int | None]]:
    """The months and years a question names, as (year, month), either None when not named:
    "in November 2022" → (2022, 11), "on 7 July, 2023" → (2023, 7), "in 2024" → (2024, None),
    "last May" → (None, 5); "what may she do" names nothing."""
    found: list[tuple[int | None, int | None]] = []
    for m in _NAMED_TIME.finditer(query):
        month, year, bare_year = m.groups()
        if bare_year:
            found.append((int(bare_year), None))
            continue
        if month.lower() == "may" and not year and not _MAY_THE_MONTH.search(query[: m.start()]):
            continue
        found.append((int(year) if year else None, _MONTHS.index(month.lower()) + 1))
    return found


def in_named_time(when: datetime | None, times: Sequence[tuple[int | None, int | None]]) -> bool:
    """Whether `when` (the turn's own local time) falls in one of the named months or years."""
    if when is None:
        return False
    return any((y is None or when.year == y) and (m is None or when.month == m) for y, m in times)


_FIRST_PERSON_VERB = {"does": "do", "has": "have", "is": "am", "was": "was"}
# ASCII: under IGNORECASE alone, "ſ" (long s) matches "s", and "waſ" is no key of the table above.
_FIRST_PERSON_WORDS = (
    (re.compile(r"\b(?:she|he)\b(?!['’])", re.IGNORECASE | re.ASCII), "I"),
    (re.compile(r"\b(?:her|his)\b", re.IGNORECASE | re.ASCII), "my"),
    (re.compile(r"\b(?:herself|himself)\b", re.IGNORECASE | re.ASCII), "myself"),
)
# "does I" (a question) and "I does" (a clause) agree with "I".
_THIRD_PERSON_VERB = re.compile(
    r"\b(?:(does|has|is|was)(\s+I)\b|(I\s+)(does|has|is|was)\b)", re.IGNORECASE | re.ASCII
)
# "the user", "a will": the name used as a word, not as the speaker's name. Not "that" or "this":
# more often a conjunction or pronoun before a name ("Is it likely that Nate has…") than a determiner.
_DETERMINED = re.compile(r"\b(?:the|a|an|my|your|our|their)\s+$", re.IGNORECASE)


def names_speaker(query: str, speaker: str) -> bool:
    """Whether `query` names the speaker `speaker`, not after a determiner ("the user").

    Where case can tell — a name written with a capital, in a question that mixes cases — the
    name must be written as it is ("will" is not the speaker Will, in "Where will Ana go?");
    elsewhere (a speaker "alice", a question all in lower or upper case) it is matched in any
    case, unless it is also a common word ("will", "so")."""
    return bool(_naming(query, speaker))


# How far before a name a determiner is looked for: "their" and a few spaces. Bounded, so that a
# long question naming someone many times costs one short scan per mention.
_DETERMINER_REACH = 16


def _naming(query: str, speaker: str) -> list[re.Match[str]]:
    """Where `query` names `speaker` (names_speaker's rules), first mention first."""
    if not speaker:
        return []
    cased = speaker != speaker.lower() and query != query.lower() and query != query.upper()
    if cased:
        if speaker not in query:  # the common case, without a pattern
            return []
        flags = 0
    else:
        if speaker.casefold() in STOPWORDS or speaker.casefold() not in query.casefold():
            return []
        flags = re.IGNORECASE
    name = re.compile(rf"(?<![\w'’]){re.escape(speaker)}(?:['’][sS]?)?(?![\w'’])", flags)
    return [
        m
        for m in name.finditer(query)
        if not _DETERMINED.search(query[max(0, m.start() - _DETERMINER_REACH) : m.start()])
    ]


# Two names joined ("Jon and Gina", "Jon or Gina", "Jon, Gina", "Jon & Gina"), or a question
# about both ("Did Jon and Gina both…"): the question is about each of them.
_JOINED = re.compile(r"\b(?:and|or)\b|[,&]", re.IGNORECASE)
_BOTH = re.compile(r"\bboth\b", re.IGNORECASE)


def speakers_asked_about(query: str, named: set[str]) -> set[str]:
    """Of the speakers a question names (names_speaker), those it asks about: of two that are not
    joined by "and", "or", "&" or a comma, in a question without "both", the one named first —
    the subject ("What did Joanna plan to do with the recipe Nate promised to share?" asks about
    Joanna; Nate is what she was told about). Otherwise all of them.

    Where one name is part of the other's mention ("Ann" in "Ann Lee"), the longer is the one meant.
    """
    if len(named) != 2:
        return named
    where = {}
    for speaker in named:
        found = _naming(query, speaker)
        if found:
            where[speaker] = found[0]
    if len(where) != 2:
        return named
    (first, at), (_, then) = sorted(where.items(), key=lambda kv: (kv[1].start(), -kv[1].end(), kv[0]))
    if then.start() < at.end():
        return {first}
    if _JOINED.search(query[at.end() : then.start()]) or _BOTH.search(query):
        return named
    return {first}


def first_person(query: str, speaker: str, *, pronouns: bool = True) -> str | None:
    """The question as the speaker it names would put it to themselves: "What does Melanie do to
    destress with her kids?" → "What do I do to destress with my kids?". None when the question
    does not name `speaker` (`names_speaker`).

    People speak of themselves in the first person ("I'm off to go swimming"), so a question that
    names them in the third person finds, by meaning, the turns that talk *to* or *about* them
    ("Melanie, that's great!") before their own. She, he, her, his, herself and himself are read as
    the speaker's when `pronouns`: in a question naming one speaker "her" is most often theirs; in
    one that names another too ("What did Caroline give Melanie for her birthday?") it may be the
    other's, and is left as it is.
    """
    found = _naming(query, speaker)
    if not found:
        return None
    parts, at = [], 0
    for m in found:
        parts += [query[at : m.start()], "my" if m.group().endswith(("'s", "’s", "'", "’")) else "I"]
        at = m.end()
    rewritten = "".join([*parts, query[at:]])
    for pattern, word in _FIRST_PERSON_WORDS if pronouns else ():
        rewritten = pattern.sub(partial(_cased_as, word), rewritten)

    def agree(m: re.Match[str]) -> str:
        if m.group(1):
            return _cased(_FIRST_PERSON_VERB[m.group(1).lower()], m.group(1)) + m.group(2)
        return m.group(3) + _FIRST_PERSON_VERB[m.group(4).lower()]

    return _THIRD_PERSON_VERB.sub(agree, rewritten)


def _cased_as(word: str, m: re.Match[str]) -> str:
    return _cased(word, m.group())


def _cased(word: str, like: str) -> str:
    """`word` capitalised as `like` is ("Does" → "Do"); "I" stays "I"."""
    return word[0].upper() + word[1:] if like[:1].isupper() else word


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


@dataclass(frozen=True, slots=True)
class Turn:
    kind: str
    position: int
    role: str
    text: str
    hash: str
    tokens: int
    # Carried to the answer, not ranked here.
    name: str = ""
    occurred_at: datetime | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    pinned: bool = False


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
    neighbour_ok: Callable[[Turn, Turn], bool] | None = None,
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
                    if neighbour_ok is not None and not neighbour_ok(hit, neighbour):
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
