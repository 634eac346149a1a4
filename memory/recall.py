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
from typing import Any

from django.conf import settings

from ottoweb.errors import Invalid

from . import services
from .engine import ranking, retrieval
from .engine.embeddings import EmbeddingUnavailable, Vectors, WordLlamaBackend, get_embedder
from .engine.types import is_blank
from .models import ItemVector, Job, Session
from .storage import Bounds, SessionSearch, kinds_present, other_model_vectors, turn_details, window_turns

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
# How deep each ranking reads (measured on the LoCoMo dev split: docs/evaluation.md).
RANK_DEPTH = 200


def default_rules() -> ranking.Rules:
    """The rules on by default: all of engine/ranking.py's, less those OTTO_RECALL_RULES_OFF names."""
    return ranking.ALL_RULES.without(settings.OTTO_RECALL_RULES_OFF)


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


def _word_vectors(words: Sequence[str]) -> Vectors:
    # WordLlama's weights ship in its wheel: loaded once per process (≈ 0.4 s), on first use.
    try:
        return get_embedder(WordLlamaBackend.name).embed_documents(words)
    except EmbeddingUnavailable as exc:
        log.warning("recall: no query expansion: %s", exc)
        raise


def _semantic(
    session: Session, search: SessionSearch, question: ranking.Question, rules: ranking.Rules, dim: int
) -> tuple[list[tuple[int, float]], str | None]:
    """engine/ranking.py's recipe for one kind, or BM25 alone when the session's vectors cannot
    rank (no model, or vectors of several models), with the reason. `dim`: the width of the
    question's vectors, being embedded meanwhile (0: not known yet)."""
    try:
        why = _mixed_stamps(session, search.kind)
        if why is None:
            # Computed for this recall, not stored: a read writes nothing (the worker stores them).
            search.unstored = services.straggler_vectors(session=session, kind=search.kind)
            search.read_vectors_ahead(dim)
    except EmbeddingUnavailable as exc:
        why = f"embedding model unavailable ({exc}); ranked by keywords only"
    if why is not None:
        return ranking.rank_lexical(search, question.text, RANK_DEPTH), why
    people = search.kind == "history"
    ranked, why = ranking.rank(
        search, question, limit=RANK_DEPTH, rules=rules, people=people, words=_word_vectors
    )
    # A reembed writes the new vectors oldest first: while it is under way the newest turns lack
    # theirs, so a recall with no straggler is not waiting for it (and skips the job lookup).
    return ranked, why or (_reembedding(session) if search.unstored is not None else None)


def _reembedding(session: Session) -> str | None:
    """Why a ranking by meaning is partial while the session is re-embedded: its turns lose their
    vectors at once and get the new model's one by one, so those still waiting rank by their words
    alone."""
    job = (
        Job.objects.filter(session=session, kind="reembed").unfinished().values_list("pk", flat=True).first()
    )
    # Only then is the anti-join worth its cost: the job may have nothing left to do here.
    if job is None or not session.items.filter(vector__isnull=True).exists():
        return None
    return (
        f"the session is being re-embedded (job {job}): turns still without their new vector are "
        "found by their words only until it finishes"
    )


def _turns(
    searches: dict[str, SessionSearch], wanted: dict[str, set[int]]
) -> dict[tuple[str, int], retrieval.Turn]:
    turns: dict[tuple[str, int], retrieval.Turn] = {}
    for kind, positions in wanted.items():
        # From the per-process turn cache, or plain rows (not model instances: a recall reads a few
        # hundred turns and building models was a third of its time).
        search = searches[kind]
        found = window_turns(search.session_pk, kind, positions, search.bounds, state=search.items_state)
        turns.update(((kind, t.position), t) for t in found)
    return turns


def _details(session: Session, passages: list[retrieval.Passage]) -> dict[str, dict[int, dict[str, Any]]]:
    """kind → position → the name, time, meta and pin of each returned turn (read for these alone)."""
    returned: dict[str, set[int]] = {}
    for p in passages:
        returned.setdefault(p.kind, set()).update(t.turn.position for t in p.turns)
    return {
        kind: {
            position: {"name": name, "occurred_at": when, "meta": meta, "pinned": pinned}
            for position, (name, when, meta, pinned) in turn_details(session.pk, kind, positions).items()
        }
        for kind, positions in returned.items()
    }


# Query embeddings run here while the request's thread does the keyword searches: onnxruntime lets
# go of the GIL, so on two cores they overlap (at 5,000 turns the embedding takes ≈ 6.7 ms beside
# them against ≈ 4 ms alone, and still a recall is ≈ 1 ms faster than embedding first).
_QUERY_EMBEDDERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding")


def _embed_queries_meanwhile(session: Session, queries: Sequence[str]) -> tuple[Callable[[], Vectors], int]:
    """Start embedding `queries` with the session's model, in one call; the callable waits for
    the vectors (one row each). With it, their width (0 until the model has been loaded).

    It raises EmbeddingUnavailable when the model cannot be had, as embedding inline would.
    """
    try:
        embedder = services.session_embedder(session)  # the database lookups stay on this thread
    except EmbeddingUnavailable as exc:
        failure = exc

        def unavailable() -> Vectors:
            raise failure

        return unavailable, 0
    return _QUERY_EMBEDDERS.submit(embedder.embed_queries, list(queries)).result, embedder.dim


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
    rules_off: Sequence[str] = (),
) -> dict[str, Any]:
    """Rank the session's raw items for `query` and return passages within `max_tokens`.

    `since` (inclusive) and `until` (exclusive) keep only turns that happened inside them: hits
    and neighbours alike. `rules_off`: engine/ranking.py's rules switched off for this recall,
    besides those OTTO_RECALL_RULES_OFF switches off. Invalid (the checks a request's shape
    cannot make, for the REST API and the MCP tools alike) for a blank query, or a `since` not
    before `until`.
    """
    if is_blank(query):
        raise Invalid("query must not be empty", field="query")
    if since is not None and until is not None and since >= until:
        raise Invalid("since must be before until", field="since")
    policy_of = POLICIES[policy]
    rules = default_rules().without(rules_off)
    budget = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    # A kind the session holds nothing of costs a second pass for nothing.
    kinds = kinds_present(session.pk, ["history", "context"]) if kind == "all" else [kind]
    bounds = Bounds(since=since, until=until)
    hits: list[tuple[str, int, float]] = []
    reasons: list[str] = []
    searches = {k: SessionSearch(session.pk, k, bounds) for k in ("history", "context")}
    if match == "keyword":
        for k in kinds:
            found, stopped = searches[k].keyword(query, RANK_DEPTH)
            hits.extend((k, position, score) for position, score in found)
            if stopped is not None:
                reasons.append(stopped)
    elif kinds:
        asked = {
            k: ranking.read_question(query, searches[k].speakers(), people=k == "history", rules=rules)
            for k in kinds
        }
        # The question and its first-person form in one model call (a batch of two costs ≈ 1.4 of
        # one), embedded on another thread while the keyword passes run; context reads the first row.
        embedding, dim = _embed_queries_meanwhile(session, asked.get("history", asked[kinds[0]]).asked)
        for k in kinds:
            searches[k].query_vectors = embedding
            searches[k].times_wanted = bool(asked[k].times)
            ranked, why = _semantic(session, searches[k], asked[k], rules, dim)
            if why is not None:
                reasons.append(why)
                ranked = ranked or searches[k].recent(policy_of.max_passages)
            hits.extend((k, position, score) for position, score in ranked)
    hits.sort(key=lambda h: -h[2])
    turns = _turns(
        searches, retrieval.window_positions(hits[: max(policy_of.max_passages * 3, 150)], policy_of.window)
    )
    passages, spent = retrieval.assemble(
        hits, turns, window=policy_of.window, max_tokens=budget, max_passages=policy_of.max_passages
    )
    hit_hashes = [t.turn.hash for p in passages if p.kind == "history" for t in p.turns if t.hit]
    bullets, bullet_tokens = searches["history"].bullets_for_hits(
        hit_hashes, policy_of.max_bullets, budget - spent
    )
    results: dict[str, list[dict[str, Any]]] = {"history": [], "context": []}
    details = _details(session, passages)
    for p in passages:
        results[p.kind].append(
            {
                "score": round(p.score, 6),
                "turns": [
                    {
                        "hash": t.turn.hash,
                        "role": t.turn.role,
                        **details[p.kind][t.turn.position],
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
