"""One kind of one session as recall searches it: engine/ranking.py's `Search` over the database
and the per-process caches, plus what recall's orchestration reads beside the ranking (keyword
match, the most recent items, the live bullets citing the hits)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from django.conf import settings

from ..engine import bm25
from ..engine.embeddings import Vectors
from ..engine.ranking import Candidate, positions
from ..models import TIER_X, TIER_Y, Item, local_time
from .caches import item_cache, keyword_cache, table_state, vector_cache
from .fts import bm25_search, fts_search
from .reads import (
    BULLET_FIELDS,
    bullet_sizes,
    item_rows,
    item_texts,
    items_within,
    live_bullets,
    pending_speakers,
    recall_version,
    substring_search,
)
from .recall_indexes import archived_speakers, citations, hash_key, uncited_archived
from .rows import moment
from .sql import NO_BOUNDS, Bounds
from .vectors import UnstoredVectors, vec_search_each, with_unstored

# BM25 over the item's context (speaker, date, previous turn) counts as much as its own words.
CONTEXT_WEIGHT = 1.0


class SessionSearch:
    """What one recall reads of one kind of one session, each lookup made once.

    Stage 1's candidate set: every item of `context`; of `history`, the live tiers and every
    archived item a live bullet cites. `query_vectors` waits for the question's vectors (one row
    per question asked), which another thread embeds while the keyword passes run; `unstored`
    holds vectors of items not yet stored, ranked with the rest.
    """

    def __init__(
        self,
        session_pk: int,
        kind: str,
        bounds: Bounds = NO_BOUNDS,
        query_vectors: Callable[[], Vectors] | None = None,
        unstored: UnstoredVectors | None = None,
    ) -> None:
        self.session_pk = session_pk
        self.kind = kind
        self.bounds = bounds
        # Set once the question is known (recall reads the speakers it names first).
        self.query_vectors = query_vectors
        # The newest items the worker has not embedded yet, embedded for this recall alone.
        self.unstored = unstored
        # Whether the candidates' times are read: only a question naming a time weighs them.
        self.times_wanted = True

    @cached_property
    def version(self) -> tuple[int, int]:
        """(compaction generation, newest bullet id): what the per-generation caches are keyed by.
        The generation alone is not enough: a reset starts it again at 0. Bullet ids only grow."""
        return recall_version(self.session_pk, self.kind)

    @cached_property
    def items_state(self) -> tuple[int, int]:
        """(items, newest id) of the session's kind: the keyword index and the item cache, both
        over memory_item, check their freshness against it, read once per recall (a count over
        the session's items, ≈ 5 ms at 50,000)."""
        return table_state(item_cache.table, self.session_pk, self.kind)

    @cached_property
    def vectors_state(self) -> tuple[int, int]:
        """(vectors, newest id) of the session's kind: the vector cache's freshness, read once."""
        return table_state(vector_cache.table, self.session_pk, self.kind)

    @cached_property
    def keyword_index(self) -> bm25.Index | None:
        # Looked up once per recall: a recall runs several keyword passes.
        return keyword_cache.get(self.session_pk, self.kind, state=self.items_state)

    @cached_property
    def among(self) -> Any:
        """Ids of the items inside the recall's time bounds (None: no bounds, every item)."""
        return items_within(self.session_pk, self.kind, self.bounds) if self.bounds else None

    @cached_property
    def cited(self) -> dict[int, int | tuple[int, ...]]:
        """`recall_indexes.citations`: hash key → the live bullet(s) citing it."""
        return citations(self.session_pk, self.kind, self.version)

    # engine/ranking.py's Search

    def lexical(self, query: str, limit: int) -> list[tuple[int, float]]:
        """BM25 from the session's index in memory, or from FTS5 when it does not fit the cache."""
        index = self.keyword_index
        if index is not None:
            found = bm25_search(self.session_pk, self.kind, query, limit=limit, index=index, among=self.among)
            if found is not None:
                return found
        return fts_search(
            self.session_pk,
            self.kind,
            query,
            every=False,
            limit=limit,
            context_weight=CONTEXT_WEIGHT,
            bounds=self.bounds,
        )

    def read_vectors_ahead(self, dim: int) -> None:
        """Check the vector cache's freshness (a count over the session's vectors, ≈ 0.5 ms at
        5,000) now, while another thread embeds the question, not after `dense` has waited for
        it, and take in the vectors written since the last recall. `dim`: the question's vectors'
        width (0 when the model is not loaded yet)."""
        if dim > 0:
            vector_cache.get(self.session_pk, self.kind, dim, state=self.vectors_state)

    def dense(self, rows: int, limit: int) -> list[list[tuple[int, float]]]:
        assert self.query_vectors is not None, "a dense search needs the question's vectors"
        # Every vector of the session is from its model (recall checks): no need to filter on it.
        queries = self.query_vectors()[:rows]
        found = vec_search_each(
            self.session_pk,
            self.kind,
            None,
            queries,
            limit=limit,
            bounds=self.bounds,
            among=self.among,
            state=self.vectors_state,
        )
        if self.unstored is None:
            return found
        return with_unstored(found, self.unstored, queries, limit=limit, among=self.among)

    def texts(self, item_ids: Sequence[int], chars: int) -> dict[int, str]:
        return item_texts(item_ids, chars=chars)

    def vocabulary(self) -> bm25.Index | None:
        return self.keyword_index

    def candidates(self, item_ids: Sequence[int]) -> dict[int, Candidate]:
        items = None if self.bounds else item_cache.get(self.session_pk, self.kind, state=self.items_state)
        if items is not None:
            # History's candidates are the live tiers and every item a live bullet cites.
            left_out = (
                uncited_archived(self.session_pk, self.kind, self.version) if self.kind == "history" else ()
            )
            found = {}
            for pk in item_ids:
                item = items.get(pk)
                if item is not None and pk not in left_out:
                    position, speaker, when, offset, role = item
                    moment_ = local_time(moment(when), offset) if self.times_wanted and when else None
                    found[pk] = Candidate(position, speaker, moment_, role)
            return found
        # A session too big for the cache, or a recall bounded in time: the rows where they live.
        rows = item_rows(self.session_pk, self.kind, item_ids, self.bounds, times=self.times_wanted)
        if self.kind == "context":
            return {
                pk: Candidate(position, speaker, when, role)
                for pk, position, _, _, speaker, when, role in rows
            }
        cited = self.cited
        return {
            pk: Candidate(position, speaker, when, role)
            for pk, position, tier, h, speaker, when, role in rows
            if tier in (TIER_X, TIER_Y) or hash_key(h) in cited
        }

    # beside the ranking

    def speakers(self) -> frozenset[str]:
        """The names of the items' speakers (people in history; tools and agents in context)."""
        version: tuple[int, ...] = self.version
        if self.kind != "history":
            # Context is archived as it arrives, with no compaction to move the version on.
            version = (*version, Item.objects.filter(session_id=self.session_pk, kind=self.kind).count())
        return archived_speakers(self.session_pk, self.kind, version) | pending_speakers(
            self.session_pk, self.kind
        )

    def keyword(self, query: str, limit: int) -> tuple[list[tuple[int, float]], str | None]:
        """FTS over the items' own words, then a substring scan: positions, and why the scan
        stopped short, if it did."""
        hits = fts_search(
            self.session_pk, self.kind, query, every=True, limit=limit, context_weight=0, bounds=self.bounds
        )
        if not hits:
            hits = fts_search(
                self.session_pk,
                self.kind,
                query,
                every=False,
                limit=limit,
                context_weight=0,
                bounds=self.bounds,
            )
        ranked = positions(self, hits)
        if ranked or not query.strip() or len(query.strip()) > settings.OTTO_SUBSTRING_MAX_CHARS:
            # A piece of a token is short: a longer query is answered by the word searches alone.
            return ranked, None
        # Last resort: a substring inside a token ("QUOTA" in ERR_QUOTA_7731), newest first, reading
        # at most OTTO_SUBSTRING_SCAN_CHARS of text.
        budget = settings.OTTO_SUBSTRING_SCAN_CHARS
        found, stopped = substring_search(
            self.session_pk, self.kind, query.strip(), limit=limit, bounds=self.bounds, budget_chars=budget
        )
        why = (
            f"the substring scan read only the newest {budget:,} characters of {self.kind} "
            "(OTTO_SUBSTRING_SCAN_CHARS); older turns were not scanned"
            if stopped
            else None
        )
        return positions(self, [(pk, 1.0 / (n + 1)) for n, pk in enumerate(found)]), why

    def recent(self, limit: int) -> list[tuple[int, float]]:
        """The newest items (inside the bounds), newest first: what a recall with no ranking gives."""
        rows = Item.objects.filter(session_id=self.session_pk, kind=self.kind)
        if self.bounds.since is not None:
            rows = rows.filter(occurred_at__gte=self.bounds.since)
        if self.bounds.until is not None:
            rows = rows.filter(occurred_at__lt=self.bounds.until)
        newest = rows.order_by("-position").values_list("pk", flat=True)[:limit]
        return positions(self, [(pk, 1.0 / (n + 1)) for n, pk in enumerate(newest)])

    def bullets_citing(self, hashes: Sequence[str]) -> list[tuple[int, int]]:
        """(index in `hashes` of the first hash it cites, id) of each live bullet citing any of
        `hashes`, in that order: from the citation index, without reading a bullet. A 64-bit key
        may collide, so the index is never later than the bullet's true first citation."""
        cited, first = self.cited, dict[int, int]()
        for n, h in enumerate(hashes):
            found = cited.get(hash_key(h))
            for pk in found if isinstance(found, tuple) else () if found is None else (found,):
                first.setdefault(pk, n)
        return [(n, pk) for pk, n in first.items()]

    def bullets_for_hits(self, hashes: Sequence[str], limit: int, room: int) -> tuple[list[dict], int]:
        """Live bullets that cite the hits `hashes` (best first), by the rank of the best hit they
        cite (then by their first position), as many as `limit` and `room` tokens take; with the
        tokens they spend."""
        if not hashes or limit <= 0:
            return [], 0
        hits = set(hashes)
        # Ranked from the citation index, and only their sizes read: a recall's hits are cited by
        # ≈ 100 live bullets and it returns at most 3 (reading and decoding every one was ≈ 1 ms of a
        # recall at 5,000 chunks).
        citing = self.bullets_citing(hashes)
        sizes = bullet_sizes(self.session_pk, self.kind, [pk for _, pk in citing], room)
        ranked = sorted((n, sizes[pk][0], pk) for n, pk in citing if pk in sizes)
        while True:
            picked: list[int] = []
            spent = 0
            for _, _, pk in ranked:
                if len(picked) >= limit:
                    break
                if sizes[pk][1] <= room - spent:
                    picked.append(pk)
                    spent += sizes[pk][1]
            rows = {b["id"]: b for b in live_bullets(self.session_pk, self.kind, picked)}
            # The index is by 64 bits of each hash: a bullet that cites none of the hits in full
            # goes. (Or it was superseded since the index was read: a compaction committed meanwhile.)
            wrong = {pk for pk in picked if pk not in rows or not hits.intersection(rows[pk]["hash_refs"])}
            if not wrong:
                return [{k: rows[pk][k] for k in BULLET_FIELDS[:6]} for pk in picked], spent
            ranked = [r for r in ranked if r[2] not in wrong]
