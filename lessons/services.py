"""Every write to error memory, one function each, each in a transaction (docs/decisions.md).

Only a resolved failure is stored. A lookup returns live records only and restarts the TTL of every
record it returns; a purge deletes what has expired. The API, the Celery task and the management
command all call these.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memory.engine import keywords
from memory.engine.embeddings import EmbeddingUnavailable, from_blob, to_blob
from memory.engine.types import is_blank, label_problem
from memory.services import embedding
from ottoweb.errors import Invalid, NotFound

from .models import ErrorRecord, ErrorRecordQuerySet, new_expiry

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

OUTCOMES = ("resolved", "failed", "abandoned")
MatchMode = Literal["semantic", "keyword"]

MAX_TOOL_CHARS = 200
MAX_TEXT_CHARS = 100_000
MAX_RELATED = 3
# Enough of an error message to say what it is; the model reads at most 256 tokens anyway.
EMBED_CHARS = 2_000
# Cosine of "tool: error" texts under all-MiniLM-L6-v2: a reworded failure of the same cause scored
# 0.49-0.85 in our probe, unrelated failures of the same tool a median of 0.32 (95th percentile 0.48;
# docs/lessons-and-notes.md).
MIN_SIMILARITY = 0.40
# A search a person types ("disk", "port taken") is a word or two, whose cosine to the sentence it
# means was 0.21-0.54 in our probe (0.27 for "disk" against "No space left on device"): the list
# search also lists the closest record from SEARCH_BEST_FROM. Searches that nothing recorded answers
# scored up to 0.29, so such a search may list that one record (docs/lessons-and-notes.md).
SEARCH_BEST_FROM = 0.20
# Without vectors, a record is related to a new failure when half its words are the record's (error
# words count 1, action/context words 0.5) or one error message contains the other.
RELATED_MIN_KEYWORD = 0.5

_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in into is it its of on or that the this to was were "
    "with not no can could did does while when".split()
)

NOT_STORED_REASON = {
    "failed": "outcome is 'failed': only resolved errors are stored, so a fix that did not work is never suggested",
    "abandoned": "outcome is 'abandoned': only resolved errors are stored, so an abandoned approach is not kept",
}


@dataclass(frozen=True, slots=True)
class Recorded:
    """The answer to record_error: the new record, or why nothing was stored."""

    record: ErrorRecord | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Ranked:
    """Records best first, the match that ranked them, and why it was not the one asked for."""

    records: list[ErrorRecord]
    match: MatchMode
    degraded: str | None = None


def _text(value: str, field: str, *, required: bool = True, limit: int = MAX_TEXT_CHARS) -> str:
    value = value.strip()
    if required and is_blank(value):
        raise Invalid(f"{field} must not be empty", field=field)
    if len(value) > limit:
        raise Invalid(f"{field} is {len(value):,} characters; the limit is {limit:,}", field=field)
    return value


def _tool(tool: str) -> str:
    """A tool's name as a record holds it: not empty, at most MAX_TOOL_CHARS, and one line, as a
    turn's name and a session's title are: it is shown as a label, which a line break could break
    and a direction override make read as another name."""
    tool = _text(tool, "tool", limit=MAX_TOOL_CHARS)
    problem = label_problem(tool)
    if problem:
        raise Invalid(f"tool {problem}", field="tool")
    return tool


def _embedding_text(tool: str, error: str) -> str:
    return f"{tool}: {error}"[:EMBED_CHARS]


def words(text: str) -> set[str]:
    """What a keyword match compares: the text's words minus a few function words."""
    return keywords.words(text, _STOPWORDS)


def keyword_score(record: ErrorRecord, query: str) -> float:
    """Share of the query's words found in the record (error words 1, action/context 0.5), plus 1
    when either text contains the other: the query inside the error, action or context, or the
    record's error inside the query (a new failure often quotes the old message). 0 means no match.
    """
    phrase = query.strip().lower()
    wanted = words(query)
    if not phrase:
        return 0.0
    error_words = words(record.error)
    other_words = words(record.action) | words(record.context)
    score = 0.0
    if wanted:
        score = sum(1.0 if w in error_words else 0.5 if w in other_words else 0.0 for w in wanted) / len(
            wanted
        )
    if any(phrase in field.lower() for field in (record.error, record.action, record.context)) or (
        record.error.strip().lower() in phrase
    ):
        score += 1.0
    return score


def _query_vector(text: str) -> tuple[keywords.Vector | None, str, str | None]:
    """The query's vector and the stamp it must be compared with, or why there is none."""
    try:
        backend = embedding.embedder()
        return backend.embed_query(text), embedding.database_stamp(), None
    except EmbeddingUnavailable as exc:
        log.warning("error memory falls back to keyword matching: %s", exc)
        return None, "", f"semantic matching unavailable ({exc}); ranked by keyword"


def _rank(
    rows: list[ErrorRecord],
    *,
    query: str,
    vector_text: str,
    match: MatchMode,
    searched: bool,
    least_keyword: float,
) -> Ranked:
    """Order `rows` best first and drop the unrelated.

    Semantic: a record with a vector of the database's current model scores its cosine and counts
    from MIN_SIMILARITY; a record without one (written while no model was available, or by an
    earlier model) scores by keyword, capped at 1 so a quoted message ranks like an identical one.
    `searched` (a person's search, not a lookup) also lets in, at their cosines, the vectored records
    whose keywords match and the closest one from SEARCH_BEST_FROM. Keyword, or semantic with no
    model available: keyword score at least `least_keyword`.
    """
    if not rows:
        return Ranked([], match)
    vector, stamp, degraded = None, "", None
    if match == "semantic":
        vector, stamp, degraded = _query_vector(vector_text)
    scored = keywords.rank(
        rows,
        query_vector=vector,
        vector_of=lambda r: (
            from_blob(bytes(r.embedding)) if r.embedding and r.embedding_model == stamp else None
        ),
        word_score=lambda r: keyword_score(r, query),
        least_cosine=MIN_SIMILARITY,
        least_words=least_keyword,
        words_below_cosine=searched,
        best_from=SEARCH_BEST_FROM if searched else None,
    )
    found = [r for _, r in scored]
    if vector is None:
        return Ranked(found, "keyword", degraded)
    vectored = [r for r in rows if r.embedding and r.embedding_model == stamp]
    stale = len(rows) - len(vectored)
    # Not all of it was ranked by meaning: say so, and how to end it, rather than claim "semantic".
    why = (
        f"{stale} of the {len(rows)} records have no vector of {stamp}: they were ranked by keyword "
        "(manage.py reembed --all gives them one)"
        if stale
        else None
    )
    return Ranked(found, "semantic", why)


def record_error(
    *, user: User, tool: str, error: str, action: str, outcome: str, context: str = ""
) -> Recorded:
    """Store a resolved tool failure with its fix; any other outcome stores nothing and says why.

    The record expires 90 days from now unless a lookup returns it. Its "tool: error" text is
    embedded with the database's model; if no model is available the record is stored without a
    vector (keyword matching still finds it).
    """
    tool = _tool(tool)
    error = _text(error, "error")
    if outcome not in OUTCOMES:
        raise Invalid(f"outcome must be one of {', '.join(OUTCOMES)}", field="outcome")
    action = _text(action, "action", required=outcome == "resolved")
    context = _text(context, "context", required=False)
    if outcome != "resolved":
        return Recorded(None, NOT_STORED_REASON[outcome])
    blob, stamp = None, ""
    try:
        # Embedding happens before the transaction so a model load never holds the write lock.
        blob = to_blob(embedding.embedder().embed_documents([_embedding_text(tool, error)])[0])
        stamp = embedding.database_stamp()
    except EmbeddingUnavailable as exc:
        log.warning("error record stored without a vector: %s", exc)
    with transaction.atomic():
        now = timezone.now()
        record = ErrorRecord.objects.create(
            user=user,
            tool=tool,
            error=error,
            action=action,
            context=context,
            created_at=now,
            updated_at=now,
            expires_at=new_expiry(now),
            embedding=blob,
            embedding_model=stamp,
        )
    return Recorded(record)


def get_live_error(*, user: User, record_id: int) -> ErrorRecord:
    """The caller's live record, or NotFound: another user's or an expired record is no record."""
    record = None
    if 0 < record_id < 2**63:
        record = ErrorRecord.objects.for_user(user).live().filter(pk=record_id).first()
    if record is None:
        raise NotFound(f"no error record {record_id}")
    return record


def search_errors(*, user: User, tool: str = "", query: str = "", match: MatchMode = "semantic") -> Ranked:
    """The user's live records (of `tool`, if given): newest first, or ranked by `query`.

    Listing is not a hit: no TTL restarts. Semantic search ranks by meaning and lists every keyword
    match too, and the closest record even when a short query is far from every record by meaning.
    """
    rows: ErrorRecordQuerySet = ErrorRecord.objects.for_user(user).live().of_tool(tool.strip())
    # The newest OTTO_LESSONS_SEARCH_LIMIT records: a search reads and scores each one.
    rows = rows.order_by("-updated_at", "-id")[: settings.OTTO_LESSONS_SEARCH_LIMIT]
    if is_blank(query):
        return Ranked(list(rows), match)
    # The query alone, also with a tool filter: every record it reads shares the "tool: " its vector
    # was made of, and prefixed the query scored every one of them (unrelated ones from 0.40 too).
    return _rank(
        list(rows), query=query, vector_text=query.strip(), match=match, searched=True, least_keyword=0.0
    )


def find_related_errors(
    *, user: User, tool: str, error: str, limit: int = MAX_RELATED, match: MatchMode = "semantic"
) -> Ranked:
    """Up to `limit` (1-3) live records of `tool` related to a new failure, best first.

    Every record returned is a hit: its TTL restarts (now + 90 days) and its `hits` goes up by one.
    Another user's records are never considered.
    """
    tool = _tool(tool)
    error = _text(error, "error")
    if not 1 <= limit <= MAX_RELATED:
        raise Invalid(f"limit must be between 1 and {MAX_RELATED}", field="limit")
    # Ranking reads outside the transaction (the query is embedded there too); only the hit writes.
    newest = ErrorRecord.objects.for_user(user).live().of_tool(tool).order_by("-updated_at", "-id")
    rows = list(newest[: settings.OTTO_LESSONS_SEARCH_LIMIT])
    # A new failure shares a word or two with most records of its tool: only meaning, or a strong
    # keyword match where meaning cannot be compared, counts as related (and restarts a TTL).
    ranked = _rank(
        rows,
        query=error,
        vector_text=_embedding_text(tool, error),
        match=match,
        searched=False,
        least_keyword=RELATED_MIN_KEYWORD,
    )
    ids = [r.pk for r in ranked.records[:limit]]
    if not ids:
        return ranked
    with transaction.atomic():
        now = timezone.now()
        # live(now) again: a record that expired between ranking and now is not revived.
        hit = ErrorRecord.objects.for_user(user).filter(pk__in=ids).live(now)
        hit.update(expires_at=new_expiry(now), hits=F("hits") + 1)
        fresh = ErrorRecord.objects.live(now).in_bulk(ids)
    return Ranked([fresh[i] for i in ids if i in fresh], ranked.match, ranked.degraded)


def related_to_failure(*, user: User, tool: str, error: str) -> list[ErrorRecord]:
    """The records `/runs/fit` attaches to a run whose last tool result failed (memory/hooks.py):
    `find_related_errors` of what the transcript said, cut to what a record can hold."""
    # The lookup's own limits: a tool name lessons can store, an error it can read. A name no record
    # can hold (blank, a line break in it) has none to find, and a run is not refused for its tool's name.
    if is_blank(tool) or label_problem(tool):
        return []
    return find_related_errors(user=user, tool=tool[:MAX_TOOL_CHARS], error=error[:MAX_TEXT_CHARS]).records


def reembed_errors(*, batch: int = 64) -> int:
    """Give every stored record (of every user) a vector of the database's current model; return how
    many were written. Records already stamped with it are skipped, so running it twice is cheap.
    Raises EmbeddingUnavailable when there is something to embed and no model can be loaded."""
    stamp = embedding.database_stamp()
    stale = ErrorRecord.objects.exclude(embedding_model=stamp, embedding__isnull=False).order_by("pk")
    ids = list(stale.values_list("pk", flat=True))
    done = 0
    for start in range(0, len(ids), batch):
        rows = list(ErrorRecord.objects.filter(pk__in=ids[start : start + batch]))
        vectors = embedding.embedder().embed_documents([_embedding_text(r.tool, r.error) for r in rows])
        with transaction.atomic():
            for row, vector in zip(rows, vectors, strict=True):
                # Only the vector changes: re-embedding is not an edit, so updated_at stays.
                ErrorRecord.objects.filter(pk=row.pk).update(embedding=to_blob(vector), embedding_model=stamp)
        done += len(rows)
    return done


def update_error_action(*, record: ErrorRecord, action: str) -> ErrorRecord:
    """Rewrite the recorded fix. The TTL is kept: editing a record is not a hit."""
    action = _text(action, "action")
    with transaction.atomic():
        now = timezone.now()
        ErrorRecord.objects.filter(pk=record.pk).update(action=action, updated_at=now)
        record.action, record.updated_at = action, now
    return record


def delete_error(*, record: ErrorRecord) -> None:
    with transaction.atomic():
        ErrorRecord.objects.filter(pk=record.pk).delete()


def purge_expired_errors(*, now: datetime | None = None) -> int:
    """Delete every record whose TTL has run out; return how many. Safe to run twice."""
    with transaction.atomic():
        deleted, _ = ErrorRecord.objects.expired(now or timezone.now()).delete()
    return deleted
