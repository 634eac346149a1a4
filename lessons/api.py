"""The error-memory REST API (docs/api.md, "Error memory"): record, list, edit, delete, related."""

from __future__ import annotations

from ninja import Query, Router, Status

from memory.engine.types import is_blank
from ottoweb.errors import Invalid
from ottoweb.requests import ApiRequest
from ottoweb.schemas import ERRORS

from . import services
from .schemas import (
    ActionIn,
    ErrorIn,
    ErrorListParams,
    NotStoredOut,
    RecordListOut,
    RecordOut,
    RelatedIn,
    RelatedOut,
    StoredRecordOut,
)

router = Router(tags=["lessons"])
# As a recall's blank query (docs/api.md, "Blank"); an empty or absent q lists every record.
BLANK_Q = "q must not be empty: leave it out to list every live record, most recently changed first"


@router.post("/errors", response={200: NotStoredOut, 201: StoredRecordOut, **ERRORS}, summary="Record Error")
def record_error_view(request: ApiRequest, body: ErrorIn):
    recorded = services.record_error(
        user=request.auth.user,
        tool=body.tool,
        error=body.error,
        action=body.action,
        outcome=body.outcome,
        context=body.context,
    )
    if recorded.record is None:
        return Status(200, {"stored": False, "reason": recorded.reason})
    return Status(201, {**RecordOut.model_validate(recorded.record).model_dump(), "stored": True})


@router.get("/errors", response={200: RecordListOut, **ERRORS})
def list_errors(request: ApiRequest, params: Query[ErrorListParams]):
    if params.q and is_blank(params.q):
        # Only blank characters would search for nothing and answer every record as if ranked.
        raise Invalid(BLANK_Q, field="q")
    ranked = services.search_errors(
        user=request.auth.user,
        tool=params.tool,
        query=params.q,
        match=params.match,
    )
    page = ranked.records[params.offset : params.offset + params.limit]
    return {"items": page, "count": len(ranked.records), "match": ranked.match, "degraded": ranked.degraded}


@router.patch("/errors/{record_id}", response={200: RecordOut, **ERRORS}, summary="Update Fix")
def update_error_view(request: ApiRequest, record_id: int, body: ActionIn):
    record = services.get_live_error(user=request.auth.user, record_id=record_id)
    return services.update_error_action(record=record, action=body.action)


@router.delete("/errors/{record_id}", response={204: None, **ERRORS}, summary="Delete Error")
def delete_error_view(request: ApiRequest, record_id: int):
    record = services.get_live_error(user=request.auth.user, record_id=record_id)
    services.delete_error(record=record)
    return Status(204, None)


@router.post("/related", response={200: RelatedOut, **ERRORS}, summary="Related Errors")
def related_errors_view(request: ApiRequest, body: RelatedIn):
    ranked = services.find_related_errors(
        user=request.auth.user,
        tool=body.tool,
        error=body.error,
        limit=body.limit,
        match=body.match,
    )
    return {"related_errors": ranked.records, "match": ranked.match, "degraded": ranked.degraded}
