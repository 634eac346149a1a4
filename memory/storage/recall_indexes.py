"""Recall's per-generation indexes: which live bullets cite a hash, the archived items no bullet
cites, the archived items' speakers. Keyed by `recall_version` (a compaction replaces the live
bullets and bumps it), so a stale one is never read; each process holds the sixteen most recent."""

from __future__ import annotations

from functools import lru_cache

from django.db import connection

from ..models import TIER_ARCHIVED, Bullet, Item


def hash_key(h: str) -> int:
    """64 bits of a sha256 hex hash: they keep a 50,000-chunk session's citation index near 5 MB;
    a collision would only let one uncited archived chunk through recall's stage 1, and its
    bullets are checked against the full hash."""
    return int(h[:16], 16)


@lru_cache(maxsize=16)
def citations(session_pk: int, kind: str, version: tuple[int, int]) -> dict[int, int | tuple[int, ...]]:
    """Every hash key a live bullet cites → that bullet's id (ids, when several cite it).

    One load per generation instead of one per recall: a person's turns stay live bullets
    forever, 25,000 of them in a 50,000-turn session.
    """
    rows = Bullet.objects.filter(session_id=session_pk, kind=kind, superseded=False).values_list(
        "pk", "hash_refs"
    )
    index: dict[int, int | tuple[int, ...]] = {}
    for pk, refs in rows:
        for h in refs:
            key = hash_key(h)
            seen = index.get(key)
            if seen is None:
                index[key] = pk
            elif seen != pk:
                index[key] = (*seen, pk) if isinstance(seen, tuple) else (seen, pk)
    return index


@lru_cache(maxsize=16)
def uncited_archived(session_pk: int, kind: str, version: tuple[int, int]) -> frozenset[int]:
    """Ids of the session's archived items of `kind` that no live bullet cites: the items of
    history that are not recall's candidates (the live tiers and every cited item are). They only
    change when a compaction archives more or a pin puts a turn back, which move the version on."""
    cited = citations(session_pk, kind, version)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.id, c.hash FROM memory_item i JOIN memory_chunk c ON c.id = i.chunk_id "
            "WHERE i.session_id = %s AND i.kind = %s AND i.tier = %s",
            [session_pk, kind, TIER_ARCHIVED],
        )
        return frozenset(int(pk) for pk, h in cursor.fetchall() if hash_key(h) not in cited)


@lru_cache(maxsize=256)
def archived_speakers(session_pk: int, kind: str, version: tuple[int, ...]) -> frozenset[str]:
    """The names of the session's archived items of `kind`: they only change when a compaction
    archives more, which moves the version on."""
    names = (
        Item.objects.filter(session_id=session_pk, kind=kind, tier=TIER_ARCHIVED)
        .exclude(name="")
        .values_list("name", flat=True)
        .distinct()
    )
    return frozenset(names)


def clear_recall_indexes() -> None:
    """Forget the per-generation indexes (tests, between databases)."""
    citations.cache_clear()
    uncited_archived.cache_clear()
    archived_speakers.cache_clear()
