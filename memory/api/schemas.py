"""Request and response shapes of the memory API (docs/api.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import Field

from ottoweb.schemas import Moment, StrictIn

# The answers the MCP tools give too are shaped in memory/answers.py; the operations here name them.
from ..answers import BulletOut, TurnOut
from ..answers import RecallOut as RecallOut
from ..engine.ranking import RULES, RuleName
from ..engine.types import SESSION_ID_CHARS

RoleName = Literal["user", "assistant", "tool", "system"]
KindName = Literal["history", "context"]


class SessionIn(StrictIn):
    id: str | None = Field(None, min_length=1, max_length=128, pattern=rf"^[{SESSION_ID_CHARS}]+$")
    # One line each (services.sessions.session_label_problem): no control character, line break or
    # direction override, as a turn's name.
    title: str = Field("", max_length=200)
    workspace: str = Field("", max_length=200)
    x_budget: int | None = Field(None, ge=16, le=10_000_000)
    y_budget: int | None = Field(None, ge=32, le=10_000_000)
    # The share of Y a person's verbatim turns may fill; absent: OTTO_PROTECTED_SHARE.
    protected_share: float | None = Field(None, ge=0.05, le=1.0)


class TokensOut(Schema):
    x: int
    y_raw: int
    bullets: int


class SessionOut(Schema):
    id: str
    title: str
    workspace: str
    created_at: datetime
    updated_at: datetime
    turns: int
    x_budget: int
    y_budget: int
    generation: int
    tokens: TokensOut
    embedding_model: str
    protected_share: float


class SessionDetailOut(SessionOut):
    unembedded: int = Field(
        description="turns still waiting for their vector (the worker writes them shortly after an "
        "append; recall finds such turns by their words meanwhile)"
    )


class SessionListOut(Schema):
    items: list[SessionOut]
    count: int


class ItemIn(StrictIn):
    role: RoleName
    text: str
    kind: KindName = "history"
    protected: bool | None = None
    name: str = Field(
        "",
        max_length=64,
        description="who said it: a person's or an agent's name (as OpenAI messages' `name`); no control "
        "character, line or paragraph separator, or direction override or isolate",
    )
    occurred_at: Moment = Field(
        None,
        description="when it happened, ISO 8601 with an offset of whole minutes; its instant (to the "
        "microsecond) and offset are kept; default: when it arrives",
    )
    meta: dict[str, Any] | None = Field(
        None,
        description="your own JSON object (at most 4 KB, its numbers finite and within ±(2^53 - 1)), "
        "stored and returned as the same JSON values, never ranked",
    )
    pinned: bool = Field(
        False,
        description="keep the turn verbatim in the prompt view, whatever its age, until unpinned "
        "(history items only; at most OTTO_MAX_PINS a session, within its protected share of Y)",
    )


class BatchIn(StrictIn):
    # At most OTTO_MAX_BATCH_ITEMS items (413 beyond: the view checks it, naming the limit).
    items: list[ItemIn] = Field(..., min_length=1)


class CompactionRef(Schema):
    job_id: str


class AppendOut(Schema):
    hash: str
    kind: KindName
    position: int
    compaction: CompactionRef | None = None


class BatchOut(Schema):
    items: list[AppendOut]


class PoppedOut(Schema):
    # The turn taken back, or null when the session held none.
    item: TurnOut | None


class PinIn(StrictIn):
    pinned: bool = Field(..., description="true: keep the turn verbatim in the view; false: unpin it")


class ContextTokens(Schema):
    bullets: int
    y_raw: int
    x: int
    total: int
    protected: int
    held_back: int = Field(description="tokens of Y's raw turns not shown while a compaction is due")


class Budgets(Schema):
    x: int
    y: int


class ContextOut(Schema):
    kind: KindName
    bullets: list[BulletOut]
    y_raw: list[TurnOut]
    x: list[TurnOut]
    tokens: ContextTokens
    held_back: int = Field(
        description="how many of Y's raw turns are not shown (the person's are shown first), so the "
        "view stays within its budget, until the due compaction summarises them; recall finds them meanwhile"
    )
    budgets: Budgets
    over_budget: bool
    text: str


class RecallIn(StrictIn):
    query: str = Field(..., max_length=10_000)
    kind: Literal["history", "context", "all"] = "all"
    match: Literal["semantic", "keyword"] = "semantic"
    policy: Literal["default", "procedural"] = "default"
    max_tokens: int | None = Field(None, ge=1, le=200_000)
    since: Moment = Field(None, description="only turns that happened at or after this time (ISO 8601)")
    until: Moment = Field(None, description="only turns that happened before this time (ISO 8601)")
    rules_off: list[RuleName] | None = Field(
        None,
        max_length=len(RULES),
        description="ranking rules to switch off for this recall, besides those the server switches "
        "off (OTTO_RECALL_RULES_OFF); docs/recall.md says what each does",
    )


class MemoryActionIn(StrictIn):
    action: Literal["compact", "summary", "reset"]
    mode: Literal["summary", "all"] | None = None


class ReembedIn(StrictIn):
    model: str | None = Field(None, max_length=300)


class JobRef(Schema):
    job_id: str


class JobOut(Schema):
    id: str
    kind: str
    status: str
    progress: int
    total: int
    error: str
    session: str | None


# A recorded fix of a failed tool, as /runs/fit attaches it (`related_errors`; memory/hooks.py) and
# error memory's own API answers it (lessons/schemas.py): one shape, one name in the OpenAPI
# document. No docstring: it would become the published schema's description.
class RecordOut(Schema):
    id: int
    tool: str
    error: str
    action: str
    context: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    hits: int


class AuditEntryOut(Schema):
    """One state-changing call of the caller's, as the server resolved it (accounts/audit.py)."""

    id: int
    created_at: datetime = Field(description="when the answer was given")
    channel: Literal["api", "dashboard", "mcp"] = Field(description="where the call came in")
    method: str = Field(description='the HTTP method; "CALL" for an MCP tool call')
    path: str = Field(description='the path called; "/mcp" or "stdio" for an MCP tool call')
    action: str = Field(
        description='the operation: method and route template ("POST /api/v1/sessions/{sid}/items"), '
        '"mcp <tool>", or the dashboard route\'s name ("token-revoke")'
    )
    object: str = Field(
        description='what was acted on, "<parameter>:<value>" ("sid:trip", "record_id:7"; "id:<new id>" '
        'for a create); "" when nothing is named'
    )
    session: str = Field(description='the session acted on, or ""')
    status: int = Field(description="the HTTP status answered (an MCP tool call: its REST twin's)")
    outcome: Literal["ok", "refused", "error"] = Field(
        description="ok: status below 400; refused: 4xx (nothing was changed); error: 5xx"
    )
    token: str = Field(description='the first 12 characters of the API token used; "" for the dashboard')


class AuditListOut(Schema):
    items: list[AuditEntryOut]
    count: int
