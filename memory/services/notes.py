"""Scoped memory (docs/decisions.md): notes an agent keeps between turns, each at an address it cannot forge.

The address is (user, app + domain) or (user, conversation). The user part is always the token's
user and is never taken from the request; the rest is resolved from the arguments, and every answer
hands back the mode and the `projectKey` it used. A key makes a write an upsert within its scope.
Recall is ranked within exactly one scope and fails soft: an outage answers ok with nothing
returned and says so (`degraded`), which a plain miss never does. Which scope the arguments select,
and the refusals naming them as the caller spells them, is `scopes`'.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from ottoweb.errors import Invalid, NotFound

from ..engine import keywords
from ..engine.embeddings import EmbeddingUnavailable, from_blob, to_blob
from ..engine.types import is_blank
from ..models import ScopedMemory
from . import embedding
from .scopes import CONTRACT_NAMES, Scope, ScopeNames, resolve_scope

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

MAX_CONTENT_CHARS = 100_000
MAX_KEY_CHARS = 200
MAX_RECALL = 50
# all-MiniLM-L6-v2 cosine, question against note: related pairs scored 0.41-0.66 in our probe,
# unrelated ones at most 0.15 (docs/lessons-and-notes.md). A note below this is not returned.
MIN_SCORE = 0.20
# Enough of a note to say what it is about; the model reads at most 256 tokens anyway.
EMBED_CHARS = 2_000

_STOPWORDS = frozenset(
    "a an and are as at be by for from has have i in into is it its me my of on or that the this to was "
    "were what which who with we you do does did how".split()
)


@dataclass(frozen=True, slots=True)
class Remembered:
    note: ScopedMemory
    scope: Scope
    upserted: bool


@dataclass(frozen=True, slots=True)
class RecalledNote:
    note: ScopedMemory
    score: float | None


@dataclass(slots=True)
class Recalled:
    """A recall's answer. `degraded` is set only when search could not run; a miss leaves it None."""

    scope: Scope
    notes: list[RecalledNote] = field(default_factory=list)
    note: str | None = None
    degraded: bool | None = None


def _content(content: str) -> str:
    if is_blank(content):
        raise Invalid("content must not be empty", field="content")
    if len(content) > MAX_CONTENT_CHARS:
        raise Invalid(
            f"content is {len(content):,} characters; the limit is {MAX_CONTENT_CHARS:,}", field="content"
        )
    return content


def _key(key: str | None) -> str | None:
    if key is None:
        return None
    key = key.strip()
    if is_blank(key):
        raise Invalid("key must not be empty (leave it out to insert a new memory)", field="key")
    if len(key) > MAX_KEY_CHARS:
        raise Invalid(f"key is {len(key):,} characters; the limit is {MAX_KEY_CHARS:,}", field="key")
    return key


def remember_note(
    *,
    user: User,
    content: str,
    key: str | None = None,
    app_name: str | None = None,
    domain: str | None = None,
    conversation_id: str | None = None,
    names: ScopeNames = CONTRACT_NAMES,
) -> Remembered:
    """Write a note in the scope the arguments select, for `user` (the token's user, never a field).

    With a key, a note with that key in that scope is replaced (`upserted` True) or created; without
    one a new note is always inserted. The content is embedded for recall; if no model is available
    the note is stored without a vector and recall finds it by keyword.
    """
    scope = resolve_scope(app_name=app_name, domain=domain, conversation_id=conversation_id, names=names)
    content = _content(content)
    key = _key(key)
    blob, stamp = None, ""
    try:
        # Embedding happens before the transaction so a model load never holds the write lock.
        blob = to_blob(embedding.embedder().embed_documents([content[:EMBED_CHARS]])[0])
        stamp = embedding.database_stamp()
    except EmbeddingUnavailable as exc:
        log.warning("scoped memory stored without a vector: %s", exc)
    values: dict[str, object] = {"content": content, "embedding": blob, "embedding_model": stamp}
    try:
        return _write(user=user, scope=scope, key=key, values=values)
    except IntegrityError:
        # Two writers raced to create the same key; the later one replaces the earlier one's note.
        return _write(user=user, scope=scope, key=key, values=values)


def _write(*, user: User, scope: Scope, key: str | None, values: dict[str, object]) -> Remembered:
    with transaction.atomic():
        now = timezone.now()
        existing = None
        if key is not None:
            existing = (
                ScopedMemory.objects.in_scope(user, scope.project_key)
                .select_for_update()
                .filter(key=key)
                .first()
            )
        if existing is None:
            note = ScopedMemory.objects.create(
                user=user,
                mode=scope.mode,
                project_key=scope.project_key,
                key=key,
                created_at=now,
                updated_at=now,
                **values,
            )
            return Remembered(note, scope, upserted=False)
        for name, value in values.items():
            setattr(existing, name, value)
        existing.updated_at = now
        existing.save(update_fields=[*values, "updated_at"])
        return Remembered(existing, scope, upserted=True)


def words(text: str) -> set[str]:
    """What a keyword match compares: the text's words minus a few function words."""
    return keywords.words(text, _STOPWORDS)


def keyword_score(note: ScopedMemory, query: str) -> float:
    """1 when the query is the note's key or inside its content; else the share of its words found."""
    phrase = query.strip().lower()
    if (note.key or "").lower() == phrase or phrase in note.content.lower():
        return 1.0
    wanted = words(query)
    if not wanted:
        return 0.0
    found = words(note.content) | words(note.key or "")
    return len(wanted & found) / len(wanted)


def _ranked(notes: list[ScopedMemory], query: str, *, by_meaning: bool = True) -> list[RecalledNote]:
    """Notes scoring at least MIN_SCORE, best first.

    A note with a vector of the database's current model scores its cosine to the query (or 1 when
    the query is exactly its key); any other note, and every note without `by_meaning`, scores by
    keyword. Raises EmbeddingUnavailable when `by_meaning` and the model cannot be loaded.
    """
    vector = embedding.embedder().embed_query(query) if by_meaning else None
    stamp = embedding.database_stamp()
    phrase = query.strip().lower()
    scored = keywords.rank(
        notes,
        query_vector=vector,
        vector_of=lambda n: (
            from_blob(bytes(n.embedding)) if n.embedding and n.embedding_model == stamp else None
        ),
        word_score=lambda n: keyword_score(n, query),
        least_cosine=MIN_SCORE,
        least_words=MIN_SCORE,
        exact=lambda n: (n.key or "").lower() == phrase,
    )
    return [RecalledNote(note, round(min(score, 1.0), 4)) for score, note in scored]


def recall_notes(
    *,
    user: User,
    query: str | None,
    app_name: str | None = None,
    domain: str | None = None,
    conversation_id: str | None = None,
    limit: int = 5,
    names: ScopeNames = CONTRACT_NAMES,
) -> Recalled:
    """The notes of exactly one of `user`'s scopes that best answer `query` (newest first if empty).

    Raises Invalid for a bad scope or limit. Never raises because search is down: the answer then
    has no notes, `degraded` True and a note saying why.
    """
    scope = resolve_scope(app_name=app_name, domain=domain, conversation_id=conversation_id, names=names)
    if not 1 <= limit <= MAX_RECALL:
        raise Invalid(f"limit must be between 1 and {MAX_RECALL}", field="limit")
    if query is None:
        raise Invalid("query is required (an empty query recalls the newest notes)", field="query")
    if len(query) > MAX_CONTENT_CHARS:
        raise Invalid(
            f"query is {len(query):,} characters; the limit is {MAX_CONTENT_CHARS:,}", field="query"
        )
    try:
        notes = list(ScopedMemory.objects.in_scope(user, scope.project_key).order_by("-updated_at", "-id"))
        if not notes:
            return Recalled(scope, note=f"nothing is stored in {scope.project_key} yet")
        if is_blank(query):
            return Recalled(scope, [RecalledNote(n, None) for n in notes[:limit]])
        stamp = embedding.database_stamp()
        stale = sum(1 for n in notes if not n.embedding or n.embedding_model != stamp)
        try:
            found = _ranked(notes, query)[:limit]
            why = (
                f"{stale} of the {len(notes)} notes in {scope.project_key} have no vector of {stamp}: "
                "they were ranked by keywords (manage.py reembed --all gives them one)"
                if stale
                else None
            )
        except EmbeddingUnavailable as exc:
            # Fail soft (docs/decisions.md), but still answer: keyword ranking, saying it is not by meaning.
            log.warning("scoped recall degraded to keywords: %s", exc)
            found = _ranked(notes, query, by_meaning=False)[:limit]
            why = f"ranked by keywords: memory search by meaning is unavailable ({exc})"
    except DatabaseError as exc:
        log.exception("scoped recall degraded: the memory store failed")
        return Recalled(scope, note=f"the memory store is unavailable ({type(exc).__name__})", degraded=True)
    if not found:
        miss = f"nothing in {scope.project_key} matches the query"
        return Recalled(scope, note=miss if why is None else f"{miss}; {why}", degraded=True if why else None)
    return Recalled(scope, found, note=why, degraded=True if why else None)


# --- notes as first-class objects: list, read, delete one, delete a scope -------------------------

MAX_PAGE = 100


def _optional_scope(
    *, app_name: str | None, domain: str | None, conversation_id: str | None, names: ScopeNames
) -> Scope | None:
    if app_name is None and domain is None and conversation_id is None:
        return None
    return resolve_scope(app_name=app_name, domain=domain, conversation_id=conversation_id, names=names)


def list_notes(
    *,
    user: User,
    app_name: str | None = None,
    domain: str | None = None,
    conversation_id: str | None = None,
    limit: int = 20,
    offset: int = 0,
    names: ScopeNames = CONTRACT_NAMES,
) -> tuple[list[ScopedMemory], int]:
    """A page of `user`'s notes, newest first, of one scope (or of every scope when none is named),
    and how many there are in all. Reads only: listing is not recalling."""
    if not 1 <= limit <= MAX_PAGE:
        raise Invalid(f"limit must be between 1 and {MAX_PAGE}", field="limit")
    if not 0 <= offset <= 1_000_000_000:
        raise Invalid("offset must be between 0 and 1,000,000,000", field="offset")
    scope = _optional_scope(app_name=app_name, domain=domain, conversation_id=conversation_id, names=names)
    rows = ScopedMemory.objects.filter(user=user)
    if scope is not None:
        rows = rows.filter(project_key=scope.project_key)
    rows = rows.order_by("-updated_at", "-id")
    return list(rows[offset : offset + limit]), rows.count()


def scopes_of(*, user: User) -> list[Mapping[str, object]]:
    """Every scope `user` has notes in: its mode, projectKey, how many notes, the newest change."""
    from django.db.models import Count, Max

    return list(
        ScopedMemory.objects.filter(user=user)
        .values("mode", "project_key")
        .annotate(notes=Count("id"), updated_at=Max("updated_at"))
        .order_by("-updated_at", "project_key")
    )


def get_note(*, user: User, note_id: int) -> ScopedMemory:
    """One of `user`'s notes; NotFound for any other id (another user's included)."""

    # An id past the database's integer range is no note (not an overflow inside the driver).
    note = ScopedMemory.objects.filter(user=user, pk=note_id).first() if 0 < note_id < 2**63 else None
    if note is None:
        raise NotFound(f"no note {note_id}")
    return note


def delete_note(*, note: ScopedMemory) -> None:
    """Delete one note (its vector goes with it)."""
    ScopedMemory.objects.filter(pk=note.pk).delete()


def delete_scope(
    *,
    user: User,
    app_name: str | None = None,
    domain: str | None = None,
    conversation_id: str | None = None,
    names: ScopeNames = CONTRACT_NAMES,
) -> tuple[Scope, int]:
    """Delete every note of one of `user`'s scopes; the scope must be named. Returns how many went."""
    scope = resolve_scope(app_name=app_name, domain=domain, conversation_id=conversation_id, names=names)
    with transaction.atomic():
        deleted, _ = ScopedMemory.objects.in_scope(user, scope.project_key).delete()
    return scope, deleted


def reembed_notes(*, batch: int = 64) -> int:
    """Give every note (of every user) a vector of the database's current model; return how many
    were written. Notes already stamped with it are skipped. Raises EmbeddingUnavailable when there
    is something to embed and no model can be loaded."""
    stamp = embedding.database_stamp()
    ids = list(
        ScopedMemory.objects.exclude(embedding_model=stamp, embedding__isnull=False)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    done = 0
    for start in range(0, len(ids), batch):
        rows = list(ScopedMemory.objects.filter(pk__in=ids[start : start + batch]))
        vectors = embedding.embedder().embed_documents([r.content[:EMBED_CHARS] for r in rows])
        with transaction.atomic():
            for row, vector in zip(rows, vectors, strict=True):
                # Only the vector changes: re-embedding is not an edit, so updated_at stays.
                ScopedMemory.objects.filter(pk=row.pk).update(
                    embedding=to_blob(vector), embedding_model=stamp
                )
        done += len(rows)
    return done
