"""The engine's TierStore on the ORM; the only SQL for sqlite-vec and FTS5, and recall's reads
and per-process caches.

Callers hold the transaction. Every item is indexed for keyword search in the transaction that
stores it; vectors are written later, off the append path (`memory/recall.py`).

- `tiers.py`: `DjangoTierStore`, what the engine's `TieredQueue` stores through.
- `reads.py`: recall's reads in plain SQL (items by id or position, substring scan, bullets).
- `fts.py`: the keyword index (FTS5 on SQLite, tsvector on PostgreSQL) and BM25 from the cache.
- `vectors.py`: the sqlite-vec mirror of the vectors, vector search, items still unembedded.
- `caches.py`: the per-process `vector_cache`, `keyword_cache` and `item_cache` (the candidates'
  positions, speakers and times), within a memory budget.
- `recall_indexes.py`: recall's per-generation indexes (which bullets cite a hash, the archived
  items no bullet cites, the archived items' speakers).
- `turn_cache.py`: the per-process `turn_cache` of what assembly reads of a turn (role, text, hash,
  tokens), and `window_turns`, which reads the windows' turns from it or from the database.
- `search.py`: `SessionSearch`, one kind of one session as recall's ranking reads it.
- `lookups.py`: the lookups every request makes (token, session, tier state), SQL written once.
- `rows.py`, `sql.py`: engine values from rows; what the raw SQL shares (`Bounds`, the vendor).
"""

from .caches import (
    KeywordCache,
    SessionCache,
    VectorCache,
    item_cache,
    keyword_cache,
    vector_cache,
)
from .fts import bm25_search, fts_delete, fts_index_many, fts_search, scope_of
from .reads import (
    BULLET_FIELDS,
    SUBSTRING_BATCH,
    bullet_sizes,
    item_rows,
    item_texts,
    items_within,
    kinds_present,
    live_bullets,
    pending_speakers,
    recall_version,
    substring_search,
    turn_details,
    turn_rows,
)
from .recall_indexes import clear_recall_indexes
from .rows import bullet_from_row, bullet_row, item_from_row, moment, said_from_sql, said_of
from .search import SessionSearch
from .sql import NO_BOUNDS, Bounds
from .tiers import DjangoTierStore
from .turn_cache import turn_cache, window_turns
from .vectors import (
    UnstoredVectors,
    ensure_vec_table,
    other_model_vectors,
    sessions_missing_vectors,
    unembedded_items,
    vec_delete,
    vec_search,
    vec_search_each,
    vec_tables,
    vec_write,
)

__all__ = [
    "UnstoredVectors",
    "BULLET_FIELDS",
    "bullet_sizes",
    "NO_BOUNDS",
    "SUBSTRING_BATCH",
    "Bounds",
    "DjangoTierStore",
    "KeywordCache",
    "SessionCache",
    "SessionSearch",
    "VectorCache",
    "bm25_search",
    "bullet_from_row",
    "bullet_row",
    "clear_recall_indexes",
    "ensure_vec_table",
    "fts_delete",
    "fts_index_many",
    "fts_search",
    "item_from_row",
    "item_rows",
    "item_texts",
    "items_within",
    "item_cache",
    "keyword_cache",
    "kinds_present",
    "live_bullets",
    "moment",
    "other_model_vectors",
    "pending_speakers",
    "recall_version",
    "said_from_sql",
    "said_of",
    "scope_of",
    "sessions_missing_vectors",
    "substring_search",
    "turn_details",
    "turn_cache",
    "turn_rows",
    "unembedded_items",
    "vec_delete",
    "vec_search",
    "vec_search_each",
    "vec_tables",
    "vec_write",
    "window_turns",
    "vector_cache",
]
