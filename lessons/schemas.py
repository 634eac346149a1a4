"""Request and response shapes of the error-memory API (docs/api.md, "Error memory")."""

from __future__ import annotations

from typing import Literal

from ninja import Schema
from pydantic import Field

# A record's shape is memory's: /runs/fit attaches records as `related_errors`, and the OpenAPI
# document has one RecordOut.
from memory.api.schemas import RecordOut
from ottoweb.schemas import CleanIn, StrictIn

Outcome = Literal["resolved", "failed", "abandoned"]
MatchName = Literal["semantic", "keyword"]


class ErrorIn(StrictIn):
    tool: str
    error: str
    action: str
    outcome: Outcome
    context: str = ""


class ActionIn(StrictIn):
    action: str


class RelatedIn(StrictIn):
    tool: str
    error: str
    limit: int = Field(3, ge=1, le=3)
    match: MatchName = "semantic"


class ErrorListParams(CleanIn):
    tool: str = Field("", max_length=200)
    # A query string has to fit a request line (runserver refuses one over 64 KB with an HTML 414);
    # 2,000 characters of 4-byte UTF-8 are 24 KB percent-encoded. POST /related takes longer text.
    q: str = Field("", max_length=2_000)
    match: MatchName = "semantic"
    limit: int = Field(50, ge=1, le=500)
    offset: int = Field(0, ge=0)


# POST /errors answers either; `stored` tells them apart (MCP's record_error answers
# {"stored": true, "record"}): RecordOut's fields and `stored` true, or `stored` false and why.
class StoredRecordOut(RecordOut):
    stored: Literal[True]


class NotStoredOut(Schema):
    stored: Literal[False]
    reason: str


class RecordListOut(Schema):
    items: list[RecordOut]
    count: int
    match: MatchName
    degraded: str | None = None


class RelatedOut(Schema):
    related_errors: list[RecordOut]
    match: MatchName
    degraded: str | None = None
