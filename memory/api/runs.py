"""In-run compaction over HTTP (docs/api.md, "In-run compaction"): POST /runs/fit, GET /models/windows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Query, Router, Schema, Status
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from ottoweb.requests import ApiRequest
from ottoweb.schemas import ERRORS, CleanIn, StrictIn

from ..services import runs
from .schemas import RecordOut
from .sessions import get_session

router = Router(tags=["runs"])


class PassThrough(BaseModel):
    # Chat messages carry vendor fields we do not know (refusal, cache_control, …); they go back as
    # sent. A plain pydantic model: ninja's Schema validates through a getter that drops extra fields.
    model_config = ConfigDict(extra="allow")


# The bounds of a transcript's strings (README, Limits), far above what a real run sends. A call's
# arguments are the model's writing, and no model writes more than about 128K tokens (some 500,000
# characters) in one reply.
MAX_ARGUMENTS_CHARS = 1_000_000
# A message's text (or a text part's): about twice what the largest window in the table holds.
MAX_CONTENT_CHARS = 8_000_000


class ToolFunctionIn(PassThrough):
    name: str = Field(min_length=1, max_length=200)
    arguments: str = Field(max_length=MAX_ARGUMENTS_CHARS)


class ToolCallIn(PassThrough):
    id: str = Field(min_length=1, max_length=200)
    type: Literal["function"] = "function"
    function: ToolFunctionIn


class ChatMessageIn(PassThrough):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = Field(None, min_length=1, max_length=200)
    name: str | None = Field(None, max_length=200)

    @field_validator("content")
    @classmethod
    def _bounded(cls, content: str | list[dict[str, Any]] | None) -> str | list[dict[str, Any]] | None:
        parts = content if isinstance(content, list) else [{"text": content}]
        for n, part in enumerate(parts):
            text = part.get("text")
            if part.get("type") == "text" and not isinstance(text, str):
                # The part's words are what is fitted, stored and summarised: a text part without
                # them is a malformed message, not an empty one (other part types pass as sent).
                raise PydanticCustomError(
                    "text_part", "a text part must have a string `text`", {"path": [n, "text"]}
                )
            if isinstance(text, str) and len(text) > MAX_CONTENT_CHARS:
                raise PydanticCustomError(
                    "string_too_long",
                    "String should have at most {max_length} characters",
                    {
                        "max_length": MAX_CONTENT_CHARS,
                        "path": [n, "text"] if isinstance(content, list) else [],
                    },
                )
        return content


class ContextLengthErrorIn(StrictIn):
    kind: Literal["context_length"]
    message: str = Field("", max_length=100_000)
    limit: int | None = Field(None, ge=1024, le=100_000_000)


class FitIn(StrictIn):
    session: str | None = Field(None, min_length=1, max_length=128)
    model: str = Field(min_length=1, max_length=200)
    messages: list[ChatMessageIn] = Field(min_length=1)
    last_input_tokens: int | None = Field(None, ge=0, le=100_000_000)
    error: ContextLengthErrorIn | None = None
    previous_model: str | None = Field(None, min_length=1, max_length=200)
    # docs/decisions.md: a failed tool result gets the recorded fixes of its tool; off for callers that ask
    # POST /lessons/related themselves.
    related_errors: bool = True


class FitOut(Schema):
    messages: list[dict[str, Any]]
    stages: list[str]
    window: int
    budget: int
    summary: str | None
    tokens: int
    over_budget: bool
    window_source: Literal["table", "learned", "default"]
    learned: int | None
    evicted: int
    stored: int
    # The job storing and embedding the evicted turns (GET /jobs/{id}); null when none was needed.
    job_id: str | None
    related_errors: list[RecordOut] | None


class WindowOut(Schema):
    model: str
    window: int
    source: Literal["table", "learned", "default"]


class WindowsOut(Schema):
    items: list[WindowOut]


class WindowsQuery(CleanIn):
    model: str | None = Field(None, min_length=1, max_length=200)


@router.post("/runs/fit", response={200: FitOut, **ERRORS})
def fit_run(request: ApiRequest, body: FitIn):
    session = get_session(request, body.session) if body.session is not None else None
    error = (
        runs.ContextLengthError(message=body.error.message, limit=body.error.limit) if body.error else None
    )
    # FitOut reads the outcome's attributes, as it reads a model's (ninja validates from attributes).
    return runs.fit_run(
        user=request.auth.user,
        model=body.model,
        # exclude_unset: a message goes back with exactly the fields it came with.
        messages=[m.model_dump(exclude_unset=True) for m in body.messages],
        session=session,
        last_input_tokens=body.last_input_tokens,
        error=error,
        previous_model=body.previous_model,
        related_errors=body.related_errors,
    )


@router.get("/models/windows", response={200: WindowsOut, **ERRORS})
def model_windows(request: ApiRequest, params: Query[WindowsQuery]):
    registry = runs.window_registry()
    mine = runs.DjangoLearnedStore(request.auth.user)
    if params.model is not None:
        info = registry.lookup(runs.check_model(params.model), learned=mine)
        return {"items": [{"model": info.model, "window": info.window, "source": info.source}]}
    return {
        "items": [
            {"model": i.model, "window": i.window, "source": i.source} for i in registry.listing(learned=mine)
        ]
    }


class LearnedOut(Schema):
    model: str
    window: int
    updated_at: datetime


class LearnedListOut(Schema):
    items: list[LearnedOut]


class LearnedQuery(CleanIn):
    model: str = Field(min_length=1, max_length=200)


@router.get("/models/learned", response={200: LearnedListOut, **ERRORS})
def learned_limits(request: ApiRequest):
    """The limits this user's runs have taught, by model; nobody else's."""
    rows = runs.learned_limits(user=request.auth.user)
    return {"items": [{"model": r.model, "window": r.window, "updated_at": r.updated_at} for r in rows]}


@router.delete("/models/learned", response={204: None, **ERRORS})
def clear_learned_limit(request: ApiRequest, params: Query[LearnedQuery]):
    """Forget a limit this user taught; the table's window applies to their runs again."""
    runs.clear_learned_limit(user=request.auth.user, model=params.model)
    return Status(204, None)
