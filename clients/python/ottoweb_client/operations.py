"""Each client method's API operation: its method, path, request and answer components and query
parameters, as the OpenAPI document (/api/v1/openapi.json) names them."""

from __future__ import annotations

from typing import NamedTuple


class Operation(NamedTuple):
    """One API operation a client method calls: its request and answer are OpenAPI components."""

    method: str
    path: str
    body: str | None = None
    answer: str | None = None
    query: tuple[str, ...] = ()


SCOPE = ("appName", "domain", "conversationId")
# Each method's operation; tests/client/test_schema_drift.py holds it against /api/v1/openapi.json.
OPERATIONS: dict[str, Operation] = {
    "create_session": Operation("POST", "/sessions", "SessionIn", "SessionOut"),
    "list_sessions": Operation("GET", "/sessions", None, "SessionListOut", ("q", "limit", "offset")),
    "get_session": Operation("GET", "/sessions/{sid}", None, "SessionDetailOut"),
    "delete_session": Operation("DELETE", "/sessions/{sid}"),
    "import_session": Operation("POST", "/sessions/import", None, "SessionOut", ("id",)),
    "export_session": Operation("GET", "/sessions/{sid}/export"),
    "append": Operation("POST", "/sessions/{sid}/items", "ItemIn", "AppendOut"),
    "append_batch": Operation("POST", "/sessions/{sid}/items/batch", "BatchIn", "BatchOut"),
    "pin": Operation("POST", "/sessions/{sid}/items/{position}/pin", "PinIn", "TurnOut"),
    "pop": Operation("POST", "/sessions/{sid}/items/pop", None, "PoppedOut"),
    "context": Operation("GET", "/sessions/{sid}/context", None, "ContextOut", ("kind",)),
    "recall": Operation("POST", "/sessions/{sid}/recall", "RecallIn", "RecallOut"),
    "memory_action": Operation("POST", "/sessions/{sid}/memory", "MemoryActionIn"),
    "reembed": Operation("POST", "/sessions/{sid}/reembed", "ReembedIn", "JobRef"),
    "get_job": Operation("GET", "/jobs/{job_id}", None, "JobOut"),
    "audit": Operation("GET", "/audit", None, "AuditListOut", ("session", "limit", "offset")),
    "record_error": Operation("POST", "/lessons/errors", "ErrorIn", "StoredRecordOut"),
    "list_errors": Operation(
        "GET", "/lessons/errors", None, "RecordListOut", ("tool", "q", "match", "limit", "offset")
    ),
    "update_error": Operation("PATCH", "/lessons/errors/{record_id}", "ActionIn", "RecordOut"),
    "delete_error": Operation("DELETE", "/lessons/errors/{record_id}"),
    "related_errors": Operation("POST", "/lessons/related", "RelatedIn", "RelatedOut"),
    "remember": Operation("POST", "/memory/remember", "RememberIn", "RememberOut"),
    "recall_notes": Operation("POST", "/memory/recall", "ScopedRecallIn", "ScopedRecallOut"),
    "list_notes": Operation("GET", "/memory/notes", None, "NoteListOut", (*SCOPE, "limit", "offset")),
    "delete_scope": Operation("DELETE", "/memory/notes", None, "DeletedScopeOut", SCOPE),
    "list_scopes": Operation("GET", "/memory/scopes", None, "ScopeListOut"),
    "get_note": Operation("GET", "/memory/notes/{note_id}", None, "StoredNoteOut"),
    "delete_note": Operation("DELETE", "/memory/notes/{note_id}"),
    "fit_run": Operation("POST", "/runs/fit", "FitIn", "FitOut"),
    "model_windows": Operation("GET", "/models/windows", None, "WindowsOut", ("model",)),
    "learned_limits": Operation("GET", "/models/learned", None, "LearnedListOut"),
    "clear_learned_limit": Operation("DELETE", "/models/learned", None, None, ("model",)),
}
