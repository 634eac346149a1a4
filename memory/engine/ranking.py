"""The recall recipe: which rankings a question gets, how much each counts, the boosts, the fusion.

Pure: the session is read through a `Search` (memory/storage/search.py implements it over the
database and the per-process caches; tests implement it over a list), the question through
engine/questions.py. Every rule that goes beyond "BM25 fused with the dense ranking" has a name in
`RULES` and can be switched off (`Rules.without`), per recall or by setting; docs/evaluation.md
measures what each one is worth on each evaluation set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Literal, NamedTuple, Protocol, get_args

from . import bm25, expansion, questions, retrieval, salience
from .embeddings import EmbeddingUnavailable, Vectors

# Measured on the LoCoMo dev split (docs/evaluation.md records each knob's effect).
# The dense ranking counts twice in the fusion: MiniLM finds paraphrases BM25 cannot.
DENSE_WEIGHT = 2.0
# Pseudo-relevance feedback: new words from the top keyword hits make a third ranking.
FEEDBACK_DOCS = 5
FEEDBACK_TERMS = 10
# ... read from the start of each hit only: five tool outputs of 1,000,000 characters took 1.8 s.
FEEDBACK_CHARS = 16_000
# Turns by a speaker the question names rank this much higher.
SPEAKER_BOOST = 0.6
# Turns of a month or year the question names ("in November 2022") rank this much higher. The date
# is indexed among a turn's words already, but there it matches every turn of the month equally and
# is outweighed by the question's other words; a multiplier keeps the ranking by content within
# the month. LoCoMo dev: 4 of the 5 time-naming questions missed were found, none lost (0.3 found
# 2, 0.6 and 1 found 4: docs/evaluation.md).
TIME_BOOST = 0.6
# The session's words near the question's (static word vectors, engine/expansion.py) make a fourth
# ranking at this weight: a question names "activities", the turn says "pottery".
EXPANSION_WEIGHT = 1.0
# A question naming one speaker is also asked as that speaker would ask it ("What do I do to
# destress?", questions.first_person), and that question's dense ranking counts this much: people
# speak of themselves as "I", while the vectors near "Melanie" are the turns said *to* her.
# LoCoMo dev: 88.7 → 89.7 %, multi-hop 62 → 67 %; weights 1–3 all gain (docs/evaluation.md).
FIRST_PERSON_WEIGHT = 2.0
# A question that says "I" is the person's, about their own words: their turns (role "user") rank
# this much higher. Work sessions dev 90.6 → 92.9 % (multi-hop 83.9 → 92.9: "What have I asked you
# to put on the list for later?" had source files with `list` in them above the person's asks); 1.0
# scored the same; LoCoMo's questions never say "I" (docs/evaluation.md).
ASKER_BOOST = 0.6
# A question asking what the person told the agent ("Which library did I tell you to keep out of the
# project for config?") also ranks the person's turns that read as instructions (engine/salience.py,
# the prompt view's own test of a standing instruction) this much higher: "Please don't pull in
# Redux anywhere" shares no word with the question, and the person's other turns are requests.
# Work sessions dev 92.9 → 93.6 % (two found, none lost; 1.0 and a threshold of 2 the same).
INSTRUCTION_BOOST = 0.6
# ... read from the start of each turn only: the test costs ≈ 0.7 ms per 1,000 characters, and a
# person who pastes a log as their turn puts the instruction, if any, before it. 200 candidates of
# which 60 are such pastes take ≈ 20 ms at 500 characters (640 ms read whole at 16,000).
INSTRUCTION_CHARS = 500
# A question asking what was decided ("What did we settle on for the edge proxy?") ranks the turns
# that state, propose or accept a choice (salience.reads_as_decision: "I'd lean to ingress-nginx",
# "Agreed, go with your first option") this much higher: the question names the matter in its own
# words ("the edge proxy" for "ingress"), so the turn that settled it ranks below those that only
# mention it. Work sessions dev 93.6 → 95.1 % (decision 83.3 → 92.9; 0.6 found one, 1.2 three, 1.8,
# 2.5 and 4 four each, none lost); LoCoMo dev unchanged at every weight (13 of its questions ask
# what someone decided or chose; none moved); assistant sessions dev, written without the rule's
# words, 98.1 → 98.5 % (one found). Read from the same first characters as instructions.
DECISION_BOOST = 2.0
# A later turn that changes what one of the first hits says ("Correction: it's due March 14",
# "Scratch the 8080 idea, we're on 8443": salience.reads_as_update) ranks just above that hit, the
# latest change first: asked "When is the refactor due?", the turn that set a deadline matches the
# question's words better than the one that moved it, which shares the deadline's words, not the
# question's. The later turns are found by the hit's own rarest words (BM25), and by those of the
# turn before it, which it is indexed with and brings back as a neighbour. Corrections set
# (docs/evaluation.md, "The fourth set"), on sessions generated after the rule was chosen: the current
# value ahead of the stale one 49.3 → 89.9 %, first 34.8 → 65.2 %; LoCoMo and assistant sessions dev
# unchanged to the question at 2,600 and 600 tokens, work sessions dev one more found at 600.
UPDATE_HITS = 3  # the first hits whose later changes are looked for
UPDATE_DEPTH = 10  # how many turns like each hit are read for a change
UPDATE_TERMS = 8  # ... found by this many of the hit's rarest words
UPDATE_RARE = 0.01  # a change shares with the hit a word in at most this share of the items,
UPDATE_UNCOMMON = 0.02  # ... or two in at most this share (_related)


@dataclass(frozen=True, slots=True)
class Rules:
    """The rules beyond BM25 + dense fusion, each a switch (docs/recall.md says what each does)."""

    feedback: bool = True  # a BM25 ranking of the question widened by its top hits' words
    expansion: bool = True  # a BM25 ranking of the session's words near the question's
    first_person: bool = True  # a dense ranking of the question as its speaker would ask it
    subject: bool = True  # of two speakers named, the question is about the first
    speaker_boost: bool = True  # turns by a speaker the question asks about rank higher
    time_boost: bool = True  # turns of a month or year the question names rank higher
    asker: bool = True  # a question that says "I" ranks the person's (role user) turns higher
    instructions: bool = True  # "what did I tell you…" ranks the person's instructions higher
    decisions: bool = True  # "what did we decide…" ranks the turns that state a choice higher
    updates: bool = True  # a later turn that changes what a first hit says ranks just above it

    def without(self, names: Iterable[str]) -> Rules:
        """These rules with `names` switched off; a name that is no rule raises ValueError."""
        names = list(names)
        unknown = sorted(set(names) - set(RULES))
        if unknown:
            raise ValueError(f"unknown recall rule(s) {', '.join(unknown)}; the rules: {', '.join(RULES)}")
        return replace(self, **dict.fromkeys(names, False))

    def off(self) -> list[str]:
        return [name for name in RULES if not getattr(self, name)]


RULES: tuple[str, ...] = tuple(f.name for f in fields(Rules))
# The rules' names as a type, for the API's `rules_off`.
RuleName = Literal[
    "feedback",
    "expansion",
    "first_person",
    "subject",
    "speaker_boost",
    "time_boost",
    "asker",
    "instructions",
    "decisions",
    "updates",
]
assert get_args(RuleName) == RULES, "RuleName must list Rules' fields, in order"
ALL_RULES = Rules()


@dataclass(frozen=True, slots=True)
class Question:
    """What recall reads from a question before ranking: see `read_question`."""

    text: str
    named: frozenset[str]  # the speakers it names, whose names are no words to expand
    about: frozenset[str]  # of them, those it asks about, whose turns rank higher
    own: str | None  # the question as that one speaker would ask it, when it is about one
    times: tuple[tuple[int | None, int | None], ...]  # months and years it names
    asker: bool = False  # it says "I": the person asks about their own words
    instructions: bool = False  # it asks what the person told the agent
    decision: bool = False  # it asks what was decided

    @property
    def asked(self) -> list[str]:
        """The texts to embed, one vector each: the question, then its first-person form."""
        return [self.text] if self.own is None else [self.text, self.own]


def read_question(text: str, speakers: Iterable[str], *, people: bool, rules: Rules) -> Question:
    """The speakers among `speakers` the question names and asks about, its first person and the
    times it names. `people`: the items are people's turns (a conversation's history); tools' and
    agents' names in context are each named as much as another, and nobody says "I" there."""
    named = frozenset(questions.speakers_named(text, speakers, people=people))
    about = named
    if people and rules.subject:
        # Of two people named, the question is about its subject (questions.speakers_asked_about).
        about = frozenset(questions.speakers_asked_about(text, named))
    own = None
    if people and rules.first_person and len(about) == 1:
        # "I" would stand for whom, were it about several? Where another speaker is named too,
        # "her" may be theirs: the pronouns are left as they are.
        own = questions.first_person(text, next(iter(about)), pronouns=len(named) == 1)
    times = tuple(questions.named_times(text)) if rules.time_boost else ()
    asker = people and rules.asker and questions.asked_as_the_person(text)
    told = people and rules.instructions and questions.asks_for_instructions(text)
    decided = people and rules.decisions and questions.asks_for_decision(text)
    return Question(
        text=text,
        named=named,
        about=about,
        own=own,
        times=times,
        asker=asker,
        instructions=told,
        decision=decided,
    )


class Candidate(NamedTuple):
    """An item that may be returned (stage 1's candidate set), with what the boosts read."""

    position: int
    speaker: str | None
    when: datetime | None
    role: str = ""


class Search(Protocol):
    """One kind of one session, as the recipe reads it. Rankings are (item id, score), best first."""

    def lexical(self, query: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over each item's words and its context (speaker, date, the turn before)."""
        ...

    def dense(self, rows: int, limit: int) -> list[list[tuple[int, float]]]:
        """The items nearest each of the first `rows` question vectors; raises EmbeddingUnavailable."""
        ...

    def texts(self, item_ids: Sequence[int], chars: int) -> dict[int, str]:
        """The items' own text, its first `chars` characters (a tool output may be megabytes)."""
        ...

    def vocabulary(self) -> bm25.Index | None:
        """The session's keyword index, whose words expansion picks from; None when not at hand."""
        ...

    def candidates(self, item_ids: Sequence[int]) -> dict[int, Candidate]:
        """Of `item_ids`, those in the candidate set."""
        ...


# Static word vectors for query expansion; raises EmbeddingUnavailable.
EmbedWords = Callable[[Sequence[str]], Vectors]


def rank_lexical(search: Search, query: str, limit: int) -> list[tuple[int, float]]:
    """BM25 alone, for when there is no ranking by meaning: candidates' positions, best first."""
    return positions(search, search.lexical(query, limit))


def rank(
    search: Search,
    question: Question,
    *,
    limit: int,
    rules: Rules = ALL_RULES,
    people: bool,
    words: EmbedWords | None,
) -> tuple[list[tuple[int, float]], str | None]:
    """Fuse the dense ranking with BM25 rankings (as asked, widened by feedback terms, and of the
    session's words near the question's), and the dense ranking of the question in its speaker's
    first person; boost the turns of the speakers and times it names. Candidates' positions, best
    first, and why the ranking is by keywords only when it is."""
    lexical = search.lexical(question.text, limit)
    rankings = [[pk for pk, _ in lexical]]
    weights = [1.0]
    if rules.feedback and lexical:
        extra = _feedback_terms(search, [pk for pk, _ in lexical[:FEEDBACK_DOCS]], question.text)
        if extra:
            rankings.append([pk for pk, _ in search.lexical(f"{question.text} {extra}", limit)])
            weights.append(1.0)
    near = ""
    if rules.expansion and people and words is not None:
        # The expansion words alone, not with the question: with it, the question's own words
        # dominate again (measured: 87.2 % against 88.0 % leave-two-out). Searched before the
        # dense ranking, which waits for the question's vectors: this hides behind that wait.
        near = _expansion_terms(search, question, words)
    expanded = [pk for pk, _ in search.lexical(near, limit)] if near else None
    try:
        # Both questions in one search: the session's vectors are looked up once.
        searched = search.dense(len(question.asked), limit)
    except EmbeddingUnavailable as exc:
        return positions(search, lexical), f"embedding model unavailable ({exc}); ranked by keywords only"
    rankings.insert(0, [pk for pk, _ in searched[0]])
    weights.insert(0, DENSE_WEIGHT)
    if expanded is not None:
        rankings.append(expanded)
        weights.append(EXPANSION_WEIGHT)
    if question.own is not None:
        rankings.append([pk for pk, _ in searched[1]])
        weights.append(FIRST_PERSON_WEIGHT)
    fused = retrieval.rrf(rankings, weights=weights)[:limit]
    found = search.candidates([pk for pk, _ in fused])
    told = _instructions(search, found) if question.instructions else frozenset()
    chosen = _decisions(search, found) if question.decision else frozenset()
    boosted = sorted(
        (
            (pk, score * _boost(found[pk], question, rules, pk in told, pk in chosen))
            for pk, score in fused
            if pk in found
        ),
        key=lambda h: -h[1],
    )
    if rules.updates:
        boosted = _updates_first(search, boosted, found)
    return [(found[pk].position, score) for pk, score in boosted], None


def positions(search: Search, ranking: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """A ranking of item ids as the candidates' positions, in the same order (others dropped)."""
    found = search.candidates([pk for pk, _ in ranking])
    return [(found[pk].position, score) for pk, score in ranking if pk in found]


def _instructions(search: Search, found: dict[int, Candidate]) -> frozenset[int]:
    """Of the candidates, the person's turns that read as a standing instruction."""
    theirs = [pk for pk, item in found.items() if item.role == "user"]
    text_of = search.texts(theirs, INSTRUCTION_CHARS)
    return frozenset(
        pk for pk in theirs if salience.instruction_score(text_of.get(pk, "")) >= salience.INSTRUCTION
    )


def _decisions(search: Search, found: dict[int, Candidate]) -> frozenset[int]:
    """Of the candidates, the turns that state, propose or accept a choice."""
    text_of = search.texts(list(found), INSTRUCTION_CHARS)
    return frozenset(pk for pk in found if salience.reads_as_decision(text_of.get(pk, "")))


def _updates_first(
    search: Search, ranked: list[tuple[int, float]], found: dict[int, Candidate]
) -> list[tuple[int, float]]:
    """`ranked` with the later turns that change what its first hits say just above each such hit,
    the latest first; `found` gains their candidates. A hit speaks for the turn before it too: it
    is indexed with that turn as its context ("Booking the hotel." ranks for the dental check-up
    booked just before it), and comes back with it as a neighbour."""
    first = ranked[:UPDATE_HITS]
    at = {item.position: pk for pk, item in found.items()}
    # (hit, a turn it speaks for): itself, and the turn before it where that is a candidate.
    sources = [(pk, pk) for pk, _ in first]
    sources += [(pk, at[found[pk].position - 1]) for pk, _ in first if found[pk].position - 1 in at]
    said = search.texts(list(dict.fromkeys(source for _, source in sources)), INSTRUCTION_CHARS)
    index = search.vocabulary()
    # Each source's words, taken once: its query's and what a later turn must share with it.
    words = {source: bm25.words(said.get(source, "")) for _, source in sources}
    alike: dict[int, list[int]] = {}
    for source in words:
        query = _rarest(words[source], index) if index is not None else said.get(source, "")
        if query.strip():
            alike[source] = [other for other, _ in search.lexical(query, UPDATE_DEPTH + 1) if other != source]
    # The turns like the sources, read once for all (their rows, then their text).
    wanted = list(dict.fromkeys(other for others in alike.values() for other in others))
    found.update(search.candidates([other for other in wanted if other not in found]))
    later = {
        source: [
            other for other in others if other in found and found[other].position > found[source].position
        ]
        for source, others in alike.items()
    }
    text_of = search.texts(
        list(dict.fromkeys(o for others in later.values() for o in others)), INSTRUCTION_CHARS
    )
    related = _related(index)
    raised = dict(ranked)
    # A hit's next turn is indexed with the hit's words as its context ("Great." after "I'm on MR 875
    # to Palermo…"), and often ranks above it: a change goes above both.
    score_at = {found[pk].position: score for pk, score in ranked}
    score_of = dict(first)
    for pk, source in sources:
        said_there = set(words[source])
        changes = sorted(
            (
                other
                for other in later.get(source, ())
                if related(said_there, text_of.get(other, ""))
                and salience.reads_as_update(text_of.get(other, ""))
            ),
            key=lambda other: found[other].position,
        )
        here = found[pk].position
        top = max(score_of[pk], score_at.get(here - 1, 0.0), score_at.get(here + 1, 0.0))
        for n, other in enumerate(changes, start=1):
            raised[other] = max(raised.get(other, 0.0), top * (1 + n * 1e-3))
    return sorted(raised.items(), key=lambda h: -h[1])


def _rarest(words: list[str], index: bm25.Index) -> str:
    """A hit's UPDATE_TERMS rarest words in the session, as a query for the turns like it: BM25 is
    as good a judge by them, and their postings are short (without the index at hand, the hit's
    own text is the query)."""
    seen = [(index.df(w), w) for w in dict.fromkeys(words)]
    return " ".join(w for _, w in sorted(d for d in seen if d[0] > 0)[:UPDATE_TERMS])


def _related(index: bm25.Index | None) -> Callable[[set[str], str], bool]:
    """Whether a later turn speaks of what a hit says (the hit as its words, `bm25.words`): they
    share a word the session seldom uses (in at most UPDATE_RARE of its items, or 3: "8080",
    "Ostrich"), or two it uses now and then (in at most UPDATE_UNCOMMON) — not a speaker's name,
    "thanks" or "Monday" only. Without the session's index at hand, two words (stop words out)."""
    if index is None:
        return lambda hit, other: len(hit.intersection(bm25.words(other)) - retrieval.STOPWORDS) >= 2
    rare = max(3, int(len(index) * UPDATE_RARE))
    uncommon = max(3, int(len(index) * UPDATE_UNCOMMON))

    def related(hit: set[str], other: str) -> bool:
        counts = [index.df(w) for w in hit.intersection(bm25.words(other))]
        return any(0 < n <= rare for n in counts) or sum(0 < n <= uncommon for n in counts) >= 2

    return related


def _boost(
    item: Candidate, question: Question, rules: Rules, instruction: bool = False, decision: bool = False
) -> float:
    """Turns by a speaker the question asks about, the person's turns when they ask (their
    instructions the more when they ask what they said), turns that state a choice when it asks
    what was decided, and turns of a month or year it names, rank higher."""
    factor = 1.0
    if rules.speaker_boost and item.speaker in question.about:
        factor += SPEAKER_BOOST
    if question.asker and item.role == "user":
        factor += ASKER_BOOST
    if instruction:
        factor += INSTRUCTION_BOOST
    if decision:
        factor += DECISION_BOOST
    if question.times and questions.in_named_time(item.when, question.times):
        factor *= 1 + TIME_BOOST
    return factor


def _feedback_terms(search: Search, item_ids: Sequence[int], query: str) -> str:
    """Pseudo-relevance feedback: the commonest new words of the top keyword hits."""
    text_of = search.texts(item_ids, FEEDBACK_CHARS)
    texts = [text_of.get(pk, "") for pk in item_ids]
    return " ".join(retrieval.feedback_terms(texts, query, limit=FEEDBACK_TERMS))


def _expansion_terms(search: Search, question: Question, words: EmbedWords) -> str:
    """The session's words near the question's words (engine/expansion.py), as a query; "" when the
    session's keyword index is not at hand (its vocabulary is what is searched) or the word vectors
    cannot be had (an extra ranking: recall goes on without it)."""
    index = search.vocabulary()
    if index is None:
        return ""
    names = {n.lower() for n in question.named}
    terms = [t for t in retrieval.query_terms(question.text) if t not in names]
    try:
        near = expansion.expand(
            terms, index, words, asked=set(retrieval.query_terms(question.text, drop_stopwords=False))
        )
    except EmbeddingUnavailable:
        return ""
    return " ".join(near)
