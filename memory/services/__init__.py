"""Every write to memory, one function each, each in a transaction.

The API, the dashboard, Celery tasks and management commands all call these; nothing else writes.
Each module does one job:

- `sessions`: session ids, finding a user's session, creating, deleting and resetting one;
- `items`: appending items (each checked, batches bounded) and storing context items;
- `pins`: pinning and unpinning a turn, within the session's cap;
- `compaction`: a session's tiered queue with the configured summariser, and compacting it now;
- `actions`: the manual memory actions (compact now, rebuild the summary, reset);
- `embedding`: the database's embedding model and the vectors of session items;
- `jobs`: background job rows, queueing them for the worker, and claiming them;
- `worker`: what the worker runs for each job;
- `transfer`: export and import of a session document;
- `documents`: the checks of a session document before an import writes it;
- `dispatch`: sending the worker's tasks by name; `retry`: database errors tried again;
- `runs`: in-run compaction (`/runs/fit`); `notes`: scoped notes; `scopes`: which scope a note's
  arguments select, refused in the caller's words.

This package re-exports the names its callers use (`services.append_items(...)`); `runs`, `notes`
and `scopes` are imported as modules of their own.
"""

from .actions import memory_action, rebuild_summary
from .compaction import compact_session, queue_for, summarizer_for
from .dispatch import JOB_TASKS
from .embedding import (
    EMBED_BATCH,
    EMBED_DELAY,
    RECALL_EMBED_LIMIT,
    RECALL_EMBED_WINDOW,
    embed_items,
    embed_missing,
    embed_pending,
    reembed_session,
    session_embedder,
    straggler_vectors,
)
from .items import (
    AppendOutcome,
    NewItem,
    append_items,
    bounded_batches,
    check_batch,
    pop_last_item,
    store_context_items,
)
from .jobs import (
    JOB_LEASE,
    JobBusy,
    claim_job,
    enqueue_compaction,
    enqueue_context_store,
    enqueue_reembed,
    requeue_unfinished_jobs,
    worker_name,
)
from .pins import set_pinned
from .retry import DB_RETRY_PAUSES, with_db_retry
from .sessions import UNADDRESSABLE_IDS, check_session_id, create_session, delete_session, reset_session
from .transfer import EXPORT_FORMAT, EXPORT_VERSION, export_session, export_session_json, import_session
from .worker import MAX_ROUNDS, run_compaction_job, run_due_compactions, run_reembed_job, run_store_job

__all__ = [
    "AppendOutcome",
    "DB_RETRY_PAUSES",
    "EMBED_BATCH",
    "EMBED_DELAY",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "JOB_LEASE",
    "JOB_TASKS",
    "JobBusy",
    "MAX_ROUNDS",
    "NewItem",
    "RECALL_EMBED_LIMIT",
    "RECALL_EMBED_WINDOW",
    "UNADDRESSABLE_IDS",
    "append_items",
    "bounded_batches",
    "check_batch",
    "check_session_id",
    "claim_job",
    "compact_session",
    "create_session",
    "delete_session",
    "embed_items",
    "embed_missing",
    "embed_pending",
    "enqueue_compaction",
    "enqueue_context_store",
    "enqueue_reembed",
    "export_session",
    "export_session_json",
    "import_session",
    "memory_action",
    "queue_for",
    "rebuild_summary",
    "reembed_session",
    "requeue_unfinished_jobs",
    "reset_session",
    "run_compaction_job",
    "run_due_compactions",
    "run_reembed_job",
    "run_store_job",
    "session_embedder",
    "straggler_vectors",
    "pop_last_item",
    "set_pinned",
    "store_context_items",
    "summarizer_for",
    "with_db_retry",
    "worker_name",
]
