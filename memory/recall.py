"""Recall: the few raw passages that answer a question, from any depth of compaction.

Stage 1 compiles the candidates: every chunk cited by a live bullet, plus the live tiers (history);
every archived item (context, which has no bullet layer). Stage 2 ranks candidates — `semantic`
fuses the item vectors' ranking with BM25 over the item and its context, both from the session's
caches in this process when it fits (memory/storage/caches.py `VectorCache`, `KeywordCache`), else from
sqlite-vec and FTS5; `keyword` is FTS5 over the item's own words (then a substring scan) — and
spends the token budget best-first (`engine.retrieval.assemble`). Embedding trouble never fails a
recall: it degrades and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from django.conf import settings

from ottoweb.errors import Invalid

from . import services
from .engine import bm25, expansion, questions, retrieval
from .engine.embeddings import EmbeddingUnavailable, Vectors, WordLlamaBackend, get_embedder
from .models import TIER_ARCHIVED, TIER_X, TIER_Y, Bullet, Item, ItemVector, Job, Session
from .storage import (
    BULLET_FIELDS,
    NO_BOUNDS,
    Bounds,
    bm25_search,
    fts_search,
    item_rows,
    item_texts,
    items_within,
    keyword_cache,
    kinds_present,
    live_bullets,
    other_model_vectors,
    pending_speakers,
    recall_version,
    substring_search,
    turn_rows,
    vec_search_each,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Policy:
    max_passages: int
    max_bullets: int
    window: int


POLICIES = {
    "default": Policy(max_passages=40, max_bullets=3, window=1),
    # Mid-task recall: one passage and one bullet, so retrieved text does not starve the task.
    "procedural": Policy(max_passages=1, max_bullets=1, window=1),
}
DEFAULT_MAX_TOKENS = 3000
# Measured on the LoCoMo dev split (docs/evaluation.md records each knob's effect).
RANK_DEPTH = 200
# BM25 over the item's context (speaker, date, previous turn) counts as much as its own words.
CONTEXT_WEIGHT = 1.0
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


def _hash_key(h: str) -> int:
    # 64 bits of the sha256 keep a 50,000-chunk session's index near 5 MB; a collision would only
    # let one uncited archived chunk through stage 1, and `_bullets` checks the full hash.
    return int(h[:16], 16)


@lru_cache(maxsize=16)
def _citations(session_pk: int, kind: str, version: tuple[int, int]) -> dict[int, int | tuple[int, ...]]:
    """Every hash a live bullet cites → that bullet's id (ids, when several cite it).

    Keyed by `_version`: a compaction replaces the live bullets and bumps it, so a stale index is
    never read. One load per generation instead of one per recall: a person's turns
    stay live bullets forever, 25,000 of them in a 50,000-turn session.
    """
    rows = Bullet.objects.filter(session_id=session_pk, kind=kind, superseded=False).values_list(
        "pk", "hash_refs"
    )
    index: dict[int, int | tuple[int, ...]] = {}
    for pk, refs in rows:
        for h in refs:
            key = _hash_key(h)
            seen = index.get(key)
            if seen is None:
                index[key] = pk
            elif seen != pk:
                index[key] = (*seen, pk) if isinstance(seen, tuple) else (seen, pk)
    return index


def _version(session: Session, kind: str) -> tuple[int, int]:
    """What the per-generation caches are keyed by: the generation, and the newest bullet's id.

    The generation alone is not enough: a reset starts it again at 0, and the next compaction's
    generation 1 would find the index of the generation 1 before the reset. Bullet ids only grow.
    """
    return recall_version(session.pk, kind)


class _Scope:
    """One kind of one session during one recall: what its helpers share, each looked up once."""

    def __init__(self, session: Session, kind: str, bounds: Bounds = NO_BOUNDS) -> None:
        self.session = session
        self.kind = kind
        self.bounds = bounds
        # Speakers and local times of the items `candidates` has read, for the speaker and time
        # boosts without another query.
        self.speaker_of: dict[int, Any] = {}
        self.when_of: dict[int, datetime | None] = {}

    @cached_property
    def version(self) -> tuple[int, int]:
        return _version(self.session, self.kind)

    @cached_property
    def keyword_index(self) -> bm25.Index | None:
        # Looked up once per recall: each lookup checks the cache's freshness (a count over the
        # session's items, ≈ 5 ms at 50,000), and a recall runs two keyword passes.
        return keyword_cache.get(self.session.pk, self.kind)

    @cached_property
    def among(self) -> Any:
        """Ids of the items inside the recall's time bounds (None: no bounds, every item)."""
        return items_within(self.session.pk, self.kind, self.bounds) if self.bounds else None

    @cached_property
    def cited(self) -> dict[int, int | tuple[int, ...]]:
        return _citations(self.session.pk, self.kind, self.version)

    def candidates(self, item_ids: Sequence[int]) -> dict[int, int]:
        """Of `item_ids`, those in stage 1's candidate set, mapped to their positions."""
        rows = item_rows(self.session.pk, self.kind, item_ids, self.bounds)
        self.speaker_of.update((position, speaker) for _, position, _, _, speaker, _ in rows)
        self.when_of.update((position, when) for _, position, _, _, _, when in rows)
        if self.kind == "context":
            return {pk: position for pk, position, _, _, _, _ in rows}
        cited = self.cited
        return {
            pk: position
            for pk, position, tier, h, _, _ in rows
            if tier in (TIER_X, TIER_Y) or _hash_key(h) in cited
        }

    def ranked(self, ranking: Sequence[tuple[int, float]]) -> list[tuple[str, int, float]]:
        positions = self.candidates([pk for pk, _ in ranking])
        return [(self.kind, positions[pk], score) for pk, score in ranking if pk in positions]


def _mixed_stamps(session: Session, kind: str) -> str | None:
    # The common case, one model, answered from the (session, kind, model) index without a scan.
    if not other_model_vectors(session.pk, kind, session.embedding_model):
        return None
    vectors = ItemVector.objects.filter(session=session, kind=kind)
    models = set(vectors.values_list("model", flat=True).distinct())
    return (
        f"the session's {kind} vectors come from {len(models)} models ({', '.join(sorted(models))}); "
        f"ranking across embedding models is refused — re-embed the session "
        f"(POST /api/v1/sessions/{session.sid}/reembed) to rank by meaning again"
    )


def _keyword(sc: _Scope, query: str, limit: int) -> tuple[list[tuple[str, int, float]], str | None]:
    """FTS over the items' own words, then a substring scan; and why the scan stopped short, if it did."""
    session, kind = sc.session, sc.kind
    bounds = sc.bounds
    hits = fts_search(session.pk, kind, query, every=True, limit=limit, context_weight=0, bounds=bounds)
    if not hits:
        hits = fts_search(session.pk, kind, query, every=False, limit=limit, context_weight=0, bounds=bounds)
    ranked = sc.ranked(hits)
    if ranked or not query.strip() or len(query.strip()) > settings.OTTO_SUBSTRING_MAX_CHARS:
        # A piece of a token is short: a longer query is answered by the word searches alone.
        return ranked, None
    # Last resort: a substring inside a token ("QUOTA" in ERR_QUOTA_7731), newest first, reading
    # at most OTTO_SUBSTRING_SCAN_CHARS of text.
    budget = settings.OTTO_SUBSTRING_SCAN_CHARS
    found, stopped = substring_search(
        session.pk, kind, query.strip(), limit=limit, bounds=bounds, budget_chars=budget
    )
    why = (
        f"the substring scan read only the newest {budget:,} characters of {kind} "
        "(OTTO_SUBSTRING_SCAN_CHARS); older turns were not scanned"
        if stopped
        else None
    )
    return sc.ranked([(pk, 1.0 / (n + 1)) for n, pk in enumerate(found)]), why


@lru_cache(maxsize=256)
def _archived_speakers(session_pk: int, kind: str, version: tuple[int, ...]) -> frozenset[str]:
    # History's archived items only change when a compaction archives more, which bumps the version.
    names = (
        Item.objects.filter(session_id=session_pk, kind=kind, tier=TIER_ARCHIVED)
        .exclude(name="")
        .values_list("name", flat=True)
        .distinct()
    )
    return frozenset(names)


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, ...]:
    # A session's names are the same few from one recall to the next: cut into words once.
    return tuple(retrieval.query_terms(name, drop_stopwords=False))


def _speakers_named(sc: _Scope, query: str) -> set[str]:
    """Speakers (item names) the query names, e.g. "What did Melanie paint?" names Melanie."""
    session, kind = sc.session, sc.kind
    version: tuple[int, ...] = sc.version
    if kind != "history":
        # Context is archived as it arrives, with no compaction to move the version on.
        version = (*version, Item.objects.of_kind(session, kind).count())
    names = _archived_speakers(session.pk, kind, version) | pending_speakers(session.pk, kind)
    words = set(retrieval.query_terms(query, drop_stopwords=False))
    # A name all of whose words the question holds, in any case: the cheap test, for every name.
    candidates = {n for n in names if _name_words(n) and words.issuperset(_name_words(n))}
    if kind != "history":
        # Tools' and agents' names ("pytest", "bash"): any word of the question that is one.
        return candidates
    # People's names as `questions.names_speaker` reads them: "Where will Ana go?" does not name
    # a speaker Will, nor "What did the user say?" a speaker "user".
    return {n for n in candidates if questions.names_speaker(query, n)}


def _feedback_terms(item_ids: Sequence[int], query: str) -> str:
    """Pseudo-relevance feedback: the commonest new words of the top keyword hits."""
    text_of = item_texts(item_ids)
    texts = [text_of.get(pk, "")[:FEEDBACK_CHARS] for pk in item_ids]
    return " ".join(retrieval.feedback_terms(texts, query, limit=FEEDBACK_TERMS))


def _expansion_terms(sc: _Scope, query: str, named: set[str]) -> str:
    """The session's words near the question's words (engine/expansion.py), as a query; "" for
    `context` items, when the session's keyword index is not in memory (its vocabulary is what is
    searched), or when the word vectors cannot be had (an extra ranking: recall goes on without it)."""
    if sc.kind != "history":
        # Measured on conversations only; tool output's vocabulary is identifiers, not words.
        return ""
    index = sc.keyword_index
    if index is None:
        return ""
    names = {n.lower() for n in named}
    terms = [t for t in retrieval.query_terms(query) if t not in names]
    try:
        # WordLlama's weights ship in its wheel: loaded once per process (≈ 0.4 s), on first use.
        embedder = get_embedder(WordLlamaBackend.name)
        words = expansion.expand(
            terms,
            index,
            embedder.embed_documents,
            asked=set(retrieval.query_terms(query, drop_stopwords=False)),
        )
    except EmbeddingUnavailable as exc:
        log.warning("recall: no query expansion: %s", exc)
        return ""
    return " ".join(words)


def _boost_named(
    sc: _Scope, named: set[str], query: str, ranked: list[tuple[str, int, float]]
) -> list[tuple[str, int, float]]:
    """Turns by a speaker the question names, and turns of a month or year it names, rank higher."""
    times = questions.named_times(query)
    if not (named or times) or not ranked:
        return ranked
    # Both read with the ranked items' positions (_Scope.candidates): no other query.
    speaker_of, when_of = sc.speaker_of, sc.when_of

    def factor(position: int) -> float:
        f = 1 + SPEAKER_BOOST if named and speaker_of.get(position) in named else 1.0
        if times and questions.in_named_time(when_of.get(position), times):
            f *= 1 + TIME_BOOST
        return f

    boosted = [(k, p, s * factor(p)) for k, p, s in ranked]
    return sorted(boosted, key=lambda h: -h[2])


def _lexical(sc: _Scope, query: str, limit: int) -> list[tuple[int, float]]:
    """BM25 over the items and their context: from the session's index in memory (engine/bm25.py),
    or from FTS5 when the session does not fit in the cache."""
    index = sc.keyword_index  # None: the session does not fit in the cache; no second lookup
    found = (
        bm25_search(sc.session.pk, sc.kind, query, limit=limit, index=index, among=sc.among)
        if index is not None
        else None
    )
    if found is not None:
        return found
    return fts_search(
        sc.session.pk,
        sc.kind,
        query,
        every=False,
        limit=limit,
        context_weight=CONTEXT_WEIGHT,
        bounds=sc.bounds,
    )


def _semantic(
    sc: _Scope,
    query: str,
    limit: int,
    query_vectors: Callable[[], Vectors],
    *,
    named: set[str],
    about: set[str],
    first_person: bool,
) -> tuple[list[tuple[str, int, float]], str | None]:
    """Fuse the dense ranking with BM25 rankings (as asked, widened by feedback terms, and of the
    session's words near the question's), and, when `first_person`, with the dense ranking of the
    question as the speaker it is about would ask it (the second of `query_vectors`' rows).
    `named`: the speakers the question names (_speakers_named), whose names are no words to
    expand; `about`: those of them it asks about, whose turns rank higher."""
    session, kind = sc.session, sc.kind
    lexical = _lexical(sc, query, limit)
    why = None
    try:
        services.embed_stragglers(session=session, kind=kind)
        why = _mixed_stamps(session, kind)
    except EmbeddingUnavailable as exc:
        why = f"embedding model unavailable ({exc}); ranked by keywords only"
    if why is not None:
        return sc.ranked(lexical), why
    rankings = [[pk for pk, _ in lexical]]
    weights = [1.0]
    # The keyword passes run while another thread embeds the query (see recall()).
    extra = _feedback_terms([pk for pk, _ in lexical[:FEEDBACK_DOCS]], query) if lexical else ""
    if extra:
        widened = _lexical(sc, f"{query} {extra}", limit)
        rankings.append([pk for pk, _ in widened])
        weights.append(1.0)
    try:
        # One row per question asked (recall()): the question, then as its speaker would ask it.
        vectors = query_vectors()
        # Every vector of the session is from its model (checked above): no need to filter on it.
        # Both questions in one search: the session's vectors are looked up once.
        searched = vec_search_each(
            session.pk,
            kind,
            None,
            vectors[:2] if first_person else vectors[:1],
            limit=limit,
            bounds=sc.bounds,
            among=sc.among,
        )
    except EmbeddingUnavailable as exc:
        return sc.ranked(lexical), f"embedding model unavailable ({exc}); ranked by keywords only"
    rankings.insert(0, [pk for pk, _ in searched[0]])
    weights.insert(0, DENSE_WEIGHT)
    # The expansion words alone, not with the question: with it, the question's own words
    # dominate again (measured: 87.2 % against 88.0 % leave-two-out).
    near = _expansion_terms(sc, query, named)
    if near:
        rankings.append([pk for pk, _ in _lexical(sc, near, limit)])
        weights.append(EXPANSION_WEIGHT)
    if first_person:
        rankings.append([pk for pk, _ in searched[1]])
        weights.append(FIRST_PERSON_WEIGHT)
    fused = retrieval.rrf(rankings, weights=weights)
    return _boost_named(sc, about, query, sc.ranked(fused[:limit])), _reembedding(session)


def _reembedding(session: Session) -> str | None:
    """Why a ranking by meaning is partial while the session is re-embedded: its turns lose their
    vectors at once and get the new model's one by one, so those still waiting rank by their words
    alone."""
    job = (
        Job.objects.filter(session=session, kind="reembed").unfinished().values_list("pk", flat=True).first()
    )
    # Only then is the anti-join worth its cost: the job may have nothing left to do here.
    if job is None or not Item.objects.filter(session=session, vector__isnull=True).exists():
        return None
    return (
        f"the session is being re-embedded (job {job}): turns still without their new vector are "
        "found by their words only until it finishes"
    )


def _recent(sc: _Scope, limit: int) -> list[tuple[str, int, float]]:
    rows = (
        _within(Item.objects.of_kind(sc.session, sc.kind), sc.bounds)
        .order_by("-position")
        .values_list("pk", flat=True)[:limit]
    )
    return sc.ranked([(pk, 1.0 / (n + 1)) for n, pk in enumerate(rows)])


def _within(rows: Any, bounds: Bounds) -> Any:
    """An item QuerySet narrowed to the turns that happened inside `bounds`."""
    if bounds.since is not None:
        rows = rows.filter(occurred_at__gte=bounds.since)
    if bounds.until is not None:
        rows = rows.filter(occurred_at__lt=bounds.until)
    return rows


def _turns(
    session: Session, wanted: dict[str, set[int]], bounds: Bounds
) -> dict[tuple[str, int], retrieval.Turn]:
    turns: dict[tuple[str, int], retrieval.Turn] = {}
    for kind, positions in wanted.items():
        # Plain rows, not model instances: a recall reads a few hundred turns and building models
        # was a third of its time.
        turns.update(((kind, t.position), t) for t in turn_rows(session.pk, kind, positions, bounds))
    return turns


def _bullets(
    history: _Scope, passages: list[retrieval.Passage], limit: int, room: int
) -> tuple[list[dict], int]:
    """Live history bullets that cite the returned hits, by the rank of the best hit they cite."""
    order = [t.turn.hash for p in passages if p.kind == "history" for t in p.turns if t.hit]
    if not order or limit <= 0:
        return [], 0
    rank = {h: i for i, h in reversed(list(enumerate(order)))}
    cited = history.cited
    ids: set[int] = set()
    for h in rank:
        found = cited.get(_hash_key(h))
        ids.update(found if isinstance(found, tuple) else () if found is None else (found,))
    scored = []
    for b in live_bullets(history.session.pk, "history", ids):
        best = min((rank[h] for h in b["hash_refs"] if h in rank), default=None)
        if best is not None:
            scored.append((best, b["first_position"], b))
    chosen, spent = [], 0
    for _, _, b in sorted(scored, key=lambda t: (t[0], t[1])):
        if len(chosen) >= limit:
            break
        if b["tokens"] <= room - spent:
            chosen.append({k: b[k] for k in BULLET_FIELDS[:6]})
            spent += b["tokens"]
    return chosen, spent


# Query embeddings run here while the request's thread does the keyword searches: onnxruntime lets
# go of the GIL, so on two cores the ≈ 3 ms of the query's embedding hides behind them.
_QUERY_EMBEDDERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")


def _embed_queries_meanwhile(session: Session, queries: Sequence[str]) -> Callable[[], Vectors]:
    """Start embedding `queries` with the session's model, in one call; the callable waits for
    the vectors (one row each).

    It raises EmbeddingUnavailable when the model cannot be had, as embedding inline would.
    """
    try:
        embedder = services.session_embedder(session)  # the database lookups stay on this thread
    except EmbeddingUnavailable as exc:
        failure = exc

        def unavailable() -> Vectors:
            raise failure

        return unavailable
    return _QUERY_EMBEDDERS.submit(embedder.embed_queries, list(queries)).result


def _no_vector() -> Vectors:
    raise AssertionError("keyword match ranks without a query vector")


def recall(
    session: Session,
    *,
    query: str,
    kind: str = "all",
    match: str = "semantic",
    policy: str = "default",
    max_tokens: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """Rank the session's raw items for `query` and return passages within `max_tokens`.

    `since` (inclusive) and `until` (exclusive) keep only turns that happened inside them: hits
    and neighbours alike.
    """
    rules = POLICIES[policy]
    budget = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if kind == "all":
        # A kind the session holds nothing of costs a second pass for nothing.
        kinds = kinds_present(session.pk, ["history", "context"])
    else:
        kinds = [kind]
    hits: list[tuple[str, int, float]] = []
    reasons: list[str] = []

    bounds = Bounds(since=since, until=until)
    scopes = {k: _Scope(session, k, bounds) for k in ("history", "context")}
    named = {k: _speakers_named(scopes[k], query) for k in kinds} if match == "semantic" else {}
    # Of two people named, the question is about its subject (questions.speakers_asked_about):
    # measured on conversations; context's names are tools', each named one as much as another.
    about = {
        k: questions.speakers_asked_about(query, names) if k == "history" else names
        for k, names in named.items()
    }
    # A question about one speaker is also asked as they would ask it; "I" would stand for whom,
    # were it about several? History only, for the same reason. Where another speaker is named
    # too, "her" may be theirs: the pronouns are left as they are.
    own = None
    if len(about.get("history", ())) == 1:
        speaker = next(iter(about["history"]))
        own = questions.first_person(query, speaker, pronouns=len(named["history"]) == 1)
    # Both questions in one model call (a batch of two costs ≈ 1.4 of one; two calls side by
    # side on two cores, ≈ 2).
    asked = [query] if own is None else [query, own]
    query_vectors = _embed_queries_meanwhile(session, asked) if match == "semantic" else _no_vector
    for k in kinds:
        if match == "keyword":
            found, stopped = _keyword(scopes[k], query, RANK_DEPTH)
            hits.extend(found)
            if stopped is not None:
                reasons.append(stopped)
            continue
        ranked, why = _semantic(
            scopes[k],
            query,
            RANK_DEPTH,
            query_vectors,
            named=named[k],
            about=about[k],
            first_person=k == "history" and own is not None,
        )
        if why is not None:
            reasons.append(why)
            ranked = ranked or _recent(scopes[k], rules.max_passages)
        hits.extend(ranked)
    hits.sort(key=lambda h: -h[2])
    turns = _turns(
        session, retrieval.window_positions(hits[: max(rules.max_passages * 3, 150)], rules.window), bounds
    )
    passages, spent = retrieval.assemble(
        hits, turns, window=rules.window, max_tokens=budget, max_passages=rules.max_passages
    )
    bullets, bullet_tokens = _bullets(scopes["history"], passages, rules.max_bullets, budget - spent)
    results: dict[str, list[dict[str, Any]]] = {"history": [], "context": []}
    for p in passages:
        results[p.kind].append(
            {
                "score": round(p.score, 6),
                "turns": [
                    {
                        "hash": t.turn.hash,
                        "role": t.turn.role,
                        "name": t.turn.name,
                        "occurred_at": t.turn.occurred_at,
                        "meta": t.turn.meta,
                        "text": t.text,
                        "position": t.turn.position,
                        "pinned": t.turn.pinned,
                        "hit": t.hit,
                        **({"truncated": True} if t.truncated else {}),
                    }
                    for t in p.turns
                ],
            }
        )
    return {
        "query": query,
        "match": match,
        "results": results,
        "bullets": bullets,
        "tokens": spent + bullet_tokens,
        "degraded": "; ".join(dict.fromkeys(reasons)) or None,
    }


def checked_recall(
    session: Session,
    *,
    query: str,
    kind: str = "all",
    match: str = "semantic",
    policy: str = "default",
    max_tokens: int | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """`recall`, after the checks a request's shape cannot make (the REST API and the MCP tools
    alike): Invalid for a blank query, or a `since` not before `until`."""
    if not query.strip():
        raise Invalid("query must not be empty", field="query")
    if since is not None and until is not None and since >= until:
        raise Invalid("since must be before until", field="since")
    return recall(
        session,
        query=query,
        kind=kind,
        match=match,
        policy=policy,
        max_tokens=max_tokens,
        since=since,
        until=until,
    )
