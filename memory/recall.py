"""Recall: the few raw passages that answer a question, from any depth of compaction.

Stage 1 compiles the candidates: every chunk cited by a live bullet, plus the live tiers (history);
every archived item (context, which has no bullet layer). Stage 2 ranks candidates — `semantic`
fuses the item vectors' ranking with BM25 over the item and its context; `keyword` is FTS5 over the
item's own words (then a substring scan) — and spends the token budget best-first
(`engine.retrieval.assemble`). Embedding trouble never fails a recall: it degrades and says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from . import services
from .engine import retrieval
from .engine.embeddings import EmbeddingUnavailable, Vectors
from .models import TIER_ARCHIVED, TIER_X, TIER_Y, Bullet, Item, ItemVector, Session, TierState
from .store import fts_search, vec_search

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
# Measured on the LoCoMo dev split (README "Recall quality"); each knob's effect is recorded there.
RANK_DEPTH = 200
# BM25 over the item's context (speaker, date, previous turn) counts as much as its own words.
CONTEXT_WEIGHT = 1.0
# The dense ranking counts twice in the fusion: MiniLM finds paraphrases BM25 cannot.
DENSE_WEIGHT = 2.0
# Pseudo-relevance feedback: new words from the top keyword hits make a third ranking.
FEEDBACK_DOCS = 5
FEEDBACK_TERMS = 10
# Turns by a speaker the question names rank this much higher.
SPEAKER_BOOST = 0.6


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
    state = TierState.objects.filter(session=session, kind=kind).values_list("generation", flat=True).first()
    newest = Bullet.objects.filter(session=session).order_by("-pk").values_list("pk", flat=True).first()
    return int(state or 0), int(newest or 0)


def _candidates(session: Session, kind: str, item_ids: Sequence[int]) -> dict[int, int]:
    """Of `item_ids`, those in stage 1's candidate set, mapped to their positions."""
    rows = Item.objects.filter(pk__in=list(item_ids), session=session, kind=kind).values_list(
        "pk", "position", "tier", "chunk__hash"
    )
    if kind == "context":
        return {pk: position for pk, position, _, _ in rows}
    cited = _citations(session.pk, kind, _version(session, kind))
    return {
        pk: position for pk, position, tier, h in rows if tier in (TIER_X, TIER_Y) or _hash_key(h) in cited
    }


def _ranked(
    session: Session, kind: str, ranking: Sequence[tuple[int, float]]
) -> list[tuple[str, int, float]]:
    positions = _candidates(session, kind, [pk for pk, _ in ranking])
    return [(kind, positions[pk], score) for pk, score in ranking if pk in positions]


def _mixed_stamps(session: Session, kind: str) -> str | None:
    vectors = ItemVector.objects.filter(session=session, kind=kind)
    # The common case, one model, answered from the (session, kind, model) index without a scan.
    if not vectors.exclude(model=session.embedding_model).exists():
        return None
    models = set(vectors.values_list("model", flat=True).distinct())
    return (
        f"the session's {kind} vectors come from {len(models)} models ({', '.join(sorted(models))}); "
        f"ranking across embedding models is refused — re-embed the session "
        f"(POST /api/v1/sessions/{session.sid}/reembed) to rank by meaning again"
    )


def _keyword(session: Session, kind: str, query: str, limit: int) -> list[tuple[str, int, float]]:
    hits = fts_search(session.pk, kind, query, every=True, limit=limit, context_weight=0)
    if not hits:
        hits = fts_search(session.pk, kind, query, every=False, limit=limit, context_weight=0)
    ranked = _ranked(session, kind, hits)
    if ranked or not query.strip():
        return ranked
    # Last resort: a substring inside a token ("QUOTA" in ERR_QUOTA_7731), newest first.
    rows = (
        Item.objects.of_kind(session, kind)
        .filter(chunk__text__icontains=query.strip())
        .order_by("-position")
        .values_list("pk", flat=True)[:limit]
    )
    return _ranked(session, kind, [(pk, 1.0 / (n + 1)) for n, pk in enumerate(rows)])


@lru_cache(maxsize=256)
def _archived_speakers(session_pk: int, kind: str, version: tuple[int, ...]) -> frozenset[str]:
    # History's archived items only change when a compaction archives more, which bumps the version.
    names = (
        Item.objects.filter(session_id=session_pk, kind=kind, tier=TIER_ARCHIVED)
        .exclude(meta__speaker=None)
        .values_list("meta__speaker", flat=True)
        .distinct()
    )
    return frozenset(n for n in names if isinstance(n, str))


def _speakers_named(session: Session, kind: str, query: str) -> set[str]:
    """Speakers (item meta) the query names, e.g. "What did Melanie paint?" names Melanie."""
    words = set(retrieval.query_terms(query, drop_stopwords=False))
    pending = (
        Item.objects.of_kind(session, kind)
        .pending()
        .exclude(meta__speaker=None)
        .values_list("meta__speaker", flat=True)
    )
    version: tuple[int, ...] = _version(session, kind)
    if kind != "history":
        # Context is archived as it arrives, with no compaction to move the version on.
        version = (*version, Item.objects.of_kind(session, kind).count())
    names = _archived_speakers(session.pk, kind, version) | {n for n in pending if isinstance(n, str)}
    return {n for n in names if n.lower() in words}


def _feedback_terms(item_ids: Sequence[int], query: str) -> str:
    """Pseudo-relevance feedback: the commonest new words of the top keyword hits."""
    text_of = dict(Item.objects.filter(pk__in=list(item_ids)).values_list("pk", "chunk__text"))
    texts = [text_of.get(pk, "") for pk in item_ids]
    return " ".join(retrieval.feedback_terms(texts, query, limit=FEEDBACK_TERMS))


def _boost_named_speakers(
    session: Session, kind: str, query: str, ranked: list[tuple[str, int, float]]
) -> list[tuple[str, int, float]]:
    named = _speakers_named(session, kind, query)
    if not named or not ranked:
        return ranked
    speaker_of = dict(
        Item.objects.of_kind(session, kind)
        .filter(position__in=[p for _, p, _ in ranked])
        .values_list("position", "meta__speaker")
    )
    boosted = [(k, p, s * (1 + SPEAKER_BOOST) if speaker_of.get(p) in named else s) for k, p, s in ranked]
    return sorted(boosted, key=lambda h: -h[2])


def _semantic(
    session: Session, kind: str, query: str, limit: int, query_vector: Callable[[], Vectors]
) -> tuple[list[tuple[str, int, float]], str | None]:
    """Fuse the dense ranking with BM25 rankings (as asked, and widened by feedback terms)."""
    lexical = fts_search(session.pk, kind, query, every=False, limit=limit, context_weight=CONTEXT_WEIGHT)
    why = None
    dense: list[tuple[int, float]] = []
    try:
        services.embed_stragglers(session=session, kind=kind)
        why = _mixed_stamps(session, kind)
        if why is None:  # so every vector of the session is from its model: no need to filter on it
            dense = vec_search(session.pk, kind, None, query_vector(), limit=limit)
    except EmbeddingUnavailable as exc:
        why = f"embedding model unavailable ({exc}); ranked by keywords only"
    if why is not None:
        return _ranked(session, kind, lexical), why
    rankings = [[pk for pk, _ in dense], [pk for pk, _ in lexical]]
    weights = [DENSE_WEIGHT, 1.0]
    extra = _feedback_terms([pk for pk, _ in lexical[:FEEDBACK_DOCS]], query) if lexical else ""
    if extra:
        widened = fts_search(
            session.pk, kind, f"{query} {extra}", every=False, limit=limit, context_weight=CONTEXT_WEIGHT
        )
        rankings.append([pk for pk, _ in widened])
        weights.append(1.0)
    fused = retrieval.rrf(rankings, weights=weights)
    return _boost_named_speakers(session, kind, query, _ranked(session, kind, fused[:limit])), None


def _recent(session: Session, kind: str, limit: int) -> list[tuple[str, int, float]]:
    rows = Item.objects.of_kind(session, kind).order_by("-position").values_list("pk", flat=True)[:limit]
    return _ranked(session, kind, [(pk, 1.0 / (n + 1)) for n, pk in enumerate(rows)])


def _turns(session: Session, wanted: dict[str, set[int]]) -> dict[tuple[str, int], retrieval.Turn]:
    turns: dict[tuple[str, int], retrieval.Turn] = {}
    for kind, positions in wanted.items():
        # Tuples, not model instances: a recall reads a few hundred turns and building models was
        # a third of its time.
        rows = (
            Item.objects.of_kind(session, kind)
            .filter(position__in=sorted(positions))
            .values_list("position", "role", "chunk__text", "chunk__hash", "tokens")
        )
        for position, role, text, h, tokens in rows:
            turns[(kind, position)] = retrieval.Turn(
                kind=kind, position=position, role=role, text=text, hash=h, tokens=tokens
            )
    return turns


def _bullets(
    session: Session, passages: list[retrieval.Passage], limit: int, room: int
) -> tuple[list[dict], int]:
    """Live history bullets that cite the returned hits, by the rank of the best hit they cite."""
    order = [t.turn.hash for p in passages if p.kind == "history" for t in p.turns if t.hit]
    if not order or limit <= 0:
        return [], 0
    rank = {h: i for i, h in reversed(list(enumerate(order)))}
    cited = _citations(session.pk, "history", _version(session, "history"))
    ids: set[int] = set()
    for h in rank:
        found = cited.get(_hash_key(h))
        ids.update(found if isinstance(found, tuple) else () if found is None else (found,))
    fields = ("id", "text", "hash_refs", "generation", "protected", "first_position", "tokens")
    scored = []
    for b in Bullet.objects.of_kind(session, "history").live().filter(pk__in=ids).values(*fields):
        best = min((rank[h] for h in b["hash_refs"] if h in rank), default=None)
        if best is not None:
            scored.append((best, b["first_position"], b))
    chosen, spent = [], 0
    for _, _, b in sorted(scored, key=lambda t: (t[0], t[1])):
        if len(chosen) >= limit:
            break
        if b["tokens"] <= room - spent:
            chosen.append({k: b[k] for k in fields[:5]})
            spent += b["tokens"]
    return chosen, spent


def recall(
    session: Session,
    *,
    query: str,
    kind: str = "all",
    match: str = "semantic",
    policy: str = "default",
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Rank the session's raw items for `query` and return passages within `max_tokens`."""
    rules = POLICIES[policy]
    budget = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if kind == "all":
        # A kind the session holds nothing of costs a second pass for nothing.
        kinds = [k for k in ("history", "context") if Item.objects.filter(session=session, kind=k).exists()]
    else:
        kinds = [kind]
    hits: list[tuple[str, int, float]] = []
    reasons: list[str] = []

    @cache
    def query_vector() -> Vectors:
        # Embedded once however many kinds are ranked.
        return services.session_embedder(session).embed_query(query)

    for k in kinds:
        if match == "keyword":
            hits.extend(_keyword(session, k, query, RANK_DEPTH))
            continue
        ranked, why = _semantic(session, k, query, RANK_DEPTH, query_vector)
        if why is not None:
            reasons.append(why)
            ranked = ranked or _recent(session, k, rules.max_passages)
        hits.extend(ranked)
    hits.sort(key=lambda h: -h[2])
    turns = _turns(
        session, retrieval.window_positions(hits[: max(rules.max_passages * 3, 150)], rules.window)
    )
    passages, spent = retrieval.assemble(
        hits, turns, window=rules.window, max_tokens=budget, max_passages=rules.max_passages
    )
    bullets, bullet_tokens = _bullets(session, passages, rules.max_bullets, budget - spent)
    results: dict[str, list[dict[str, Any]]] = {"history": [], "context": []}
    for p in passages:
        results[p.kind].append(
            {
                "score": round(p.score, 6),
                "turns": [
                    {
                        "hash": t.turn.hash,
                        "role": t.turn.role,
                        "text": t.text,
                        "position": t.turn.position,
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
