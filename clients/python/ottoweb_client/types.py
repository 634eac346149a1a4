"""The API's answers, one TypedDict per OpenAPI component of the same name (/api/v1/openapi.json).

tests/client/test_schema_drift.py fails when a field is added, removed or changes required-ness on
either side. Times are ISO 8601 strings, as they arrive.
"""

# No `from __future__ import annotations` here: Python 3.11's TypedDict reads NotRequired only from
# evaluated annotations, and the drift test reads which keys are required.
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

Kind = Literal["history", "context"]
Match = Literal["semantic", "keyword"]
Mode = Literal["app", "conversation"]
# Where a model's window comes from: the bundled (or fetched) table, a limit one of the caller's
# runs learned from an overflow error, or the default for a model the table lacks.
WindowSource = Literal["table", "learned", "default"]
# Where an audited call came in, and how it ended: ok (below 400), refused (4xx: nothing was
# changed) or error (5xx).
Channel = Literal["api", "dashboard", "mcp"]
Outcome = Literal["ok", "refused", "error"]
# The server's recall ranking rules (memory/engine/ranking.py), for `recall(rules_off=…)`.
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


class TokensOut(TypedDict):
    x: int
    y_raw: int
    bullets: int


class SessionOut(TypedDict):
    id: str
    title: str
    workspace: str
    created_at: str
    updated_at: str
    turns: int
    x_budget: int
    y_budget: int
    generation: int
    tokens: TokensOut
    embedding_model: str
    protected_share: float


class SessionDetailOut(SessionOut):
    unembedded: int


class SessionListOut(TypedDict):
    items: list[SessionOut]
    count: int


class CompactionRef(TypedDict):
    job_id: str


class AppendOut(TypedDict):
    hash: str
    kind: Kind
    position: int
    compaction: NotRequired[CompactionRef | None]


class BatchOut(TypedDict):
    items: list[AppendOut]


class TurnOut(TypedDict):
    hash: str
    role: str
    name: str
    occurred_at: str
    meta: dict[str, Any]
    text: str
    position: int
    pinned: bool


class BulletOut(TypedDict):
    id: int
    text: str
    hash_refs: list[str]
    generation: int
    protected: bool
    pinned: bool
    quote: NotRequired[bool]


class ContextTokens(TypedDict):
    bullets: int
    y_raw: int
    x: int
    total: int
    protected: int
    held_back: int


class Budgets(TypedDict):
    x: int
    y: int


class PoppedOut(TypedDict):
    item: TurnOut | None


class ContextOut(TypedDict):
    kind: Kind
    bullets: list[BulletOut]
    y_raw: list[TurnOut]
    x: list[TurnOut]
    tokens: ContextTokens
    held_back: int
    budgets: Budgets
    over_budget: bool
    text: str


class RecallTurn(TurnOut):
    hit: bool
    truncated: NotRequired[bool]


class PassageOut(TypedDict):
    score: float
    turns: list[RecallTurn]


class RecallResults(TypedDict):
    history: list[PassageOut]
    context: list[PassageOut]


class RecallOut(TypedDict):
    query: str
    match: str
    results: RecallResults
    bullets: list[BulletOut]
    tokens: int
    degraded: str | None


class JobRef(TypedDict):
    job_id: str


class JobOut(TypedDict):
    id: str
    kind: str
    status: str
    progress: int
    total: int
    error: str
    session: str | None


class RecordOut(TypedDict):
    id: int
    tool: str
    error: str
    action: str
    context: str
    created_at: str
    updated_at: str
    expires_at: str
    hits: int


class StoredRecordOut(RecordOut):
    """record_error's answer when the record was stored: `stored` tells it from NotStoredOut."""

    stored: Literal[True]


class NotStoredOut(TypedDict):
    stored: Literal[False]
    reason: str


class RecordListOut(TypedDict):
    items: list[RecordOut]
    count: int
    match: Match
    degraded: NotRequired[str | None]


class RelatedOut(TypedDict):
    related_errors: list[RecordOut]
    match: Match
    degraded: NotRequired[str | None]


class RememberOut(TypedDict):
    ok: bool
    mode: Mode
    projectKey: str  # noqa: N815 (the API's field names)
    id: int
    upserted: bool


class NoteOut(TypedDict):
    id: int
    key: str | None
    content: str
    score: float | None
    updated_at: str


class ScopedRecallOut(TypedDict):
    ok: bool
    mode: Mode
    projectKey: str  # noqa: N815
    returned: int
    items: list[NoteOut]
    note: NotRequired[str | None]
    degraded: NotRequired[bool | None]


class StoredNoteOut(TypedDict):
    id: int
    mode: Mode
    projectKey: str  # noqa: N815
    key: str | None
    content: str
    created_at: str
    updated_at: str


class NoteListOut(TypedDict):
    items: list[StoredNoteOut]
    count: int


class ScopeOut(TypedDict):
    mode: Mode
    projectKey: str  # noqa: N815
    notes: int
    updated_at: str


class ScopeListOut(TypedDict):
    items: list[ScopeOut]


class DeletedScopeOut(TypedDict):
    mode: Mode
    projectKey: str  # noqa: N815
    deleted: int


class FitOut(TypedDict):
    """A fitted transcript: `messages` to send the model, the `stages` applied (in order), and the
    window and budget (80 % of it) they were fitted to."""

    messages: list[dict[str, Any]]
    stages: list[str]
    window: int
    budget: int
    summary: str | None
    tokens: int
    over_budget: bool
    window_source: WindowSource
    learned: int | None
    evicted: int
    stored: int
    job_id: str | None
    related_errors: list[RecordOut] | None


class WindowOut(TypedDict):
    model: str
    window: int
    source: WindowSource


class WindowsOut(TypedDict):
    items: list[WindowOut]


class LearnedOut(TypedDict):
    """A window one of the caller's runs learned from a provider's overflow error, and when."""

    model: str
    window: int
    updated_at: str


class LearnedListOut(TypedDict):
    items: list[LearnedOut]


class AuditEntryOut(TypedDict):
    """One of the caller's state-changing calls: `object` ("sid:trip", "id:<new id>"), `session` and
    `token` (the API token's first 12 characters) are "" when there is none."""

    id: int
    created_at: str
    channel: Channel
    method: str
    path: str
    action: str
    object: str
    session: str
    status: int
    outcome: Outcome
    token: str


class AuditListOut(TypedDict):
    items: list[AuditEntryOut]
    count: int


class Turn(TypedDict):
    """One item to append (the API's ItemIn): role and text, the rest optional."""

    role: Literal["user", "assistant", "tool", "system"]
    text: str
    kind: NotRequired[Kind]
    protected: NotRequired[bool | None]
    name: NotRequired[str]
    occurred_at: NotRequired[str | datetime | None]  # a datetime must have a UTC offset
    meta: NotRequired[dict[str, Any] | None]
    pinned: NotRequired[bool]


class ContextLengthError(TypedDict):
    """The provider refused the last send as too long (the API's ContextLengthErrorIn): its words in
    `message`, and its `limit` in tokens when the agent knows it (1,024 to 100,000,000)."""

    kind: Literal["context_length"]
    message: NotRequired[str]
    limit: NotRequired[int | None]
