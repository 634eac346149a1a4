"""A typed client for the ottoweb HTTP API v1: sessions, items, recall, context, notes, lessons, jobs,
the audit trail, in-run compaction, model windows and the limits learned from refusals.

Standard library only (urllib). Every refusal raises OttowebError with the API's `code` and `detail`,
and so does every failure to get an answer: "unreachable" (no connection: nothing was done),
"timeout" (sent, but no answer within `timeout` seconds: the server may have acted on it) and
"bad_answer" (sent, and the connection closed without an answer, or the answer is not HTTP or not
JSON: often another service at that address).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, cast

from .errors import OttowebError as OttowebError  # re-exported: the adapters' and users' import
from .errors import OttowebInputError as OttowebInputError
from .errors import excerpt, moment, refusal, said, session_id
from .operations import OPERATIONS as OPERATIONS  # re-exported: the package's and the drift test's
from .operations import Operation as Operation
from .types import (
    AppendOut,
    AuditListOut,
    BatchOut,
    ContextLengthError,
    ContextOut,
    DeletedScopeOut,
    FitOut,
    JobOut,
    LearnedListOut,
    NoteListOut,
    NotStoredOut,
    PoppedOut,
    RecallOut,
    RecordListOut,
    RecordOut,
    RelatedOut,
    RememberOut,
    RuleName,
    ScopedRecallOut,
    ScopeListOut,
    SessionDetailOut,
    SessionListOut,
    SessionOut,
    StoredNoteOut,
    StoredRecordOut,
    Turn,
    TurnOut,
    WindowsOut,
)

# The package's version (pyproject.toml's), sent as the User-Agent `ottoweb-client/<version>`.
__version__ = "0.1.0"


def _given(**values: Any) -> dict[str, Any]:
    """The arguments that were given: an absent optional field is left for the server's default."""
    return {k: v for k, v in values.items() if v is not None}


def _scope(app_name: str | None, domain: str | None, conversation_id: str | None) -> dict[str, Any]:
    return _given(appName=app_name, domain=domain, conversationId=conversation_id)


class Ottoweb:
    """`Ottoweb("http://127.0.0.1:8000", token="otto_…")`; every method is one API call. The address
    may end in the API's own prefix (`…/api/v1`): it is not added twice."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/").removesuffix("/api/v1") + "/api/v1"
        self.token = token
        self.timeout = timeout

    def _call(
        self,
        name: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        **path: Any,
    ) -> Any:
        op = OPERATIONS[name]
        if "sid" in path:  # an id no session can have reaches another route, or none: refused here
            session_id(path["sid"])
        url = self.base_url + op.path.format(
            **{k: urllib.parse.quote(str(v), safe="") for k, v in path.items()}
        )
        if query and _given(**query):
            url += "?" + urllib.parse.urlencode(_given(**query))
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=op.method)
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", f"ottoweb-client/{__version__}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status, content = response.status, response.read()
        except urllib.error.HTTPError as err:
            raise refusal(err.code, err.read(), err.headers.get("Retry-After")) from None
        except urllib.error.URLError as exc:  # before the request was sent: nothing was done
            raise OttowebError("unreachable", f"{self.base_url}: {exc}") from None
        except TimeoutError:  # sent: it may have been done
            raise OttowebError(
                "timeout",
                f"{self.base_url}: no answer within {self.timeout:g} s; the server may have acted on it",
            ) from None
        except (OSError, http.client.HTTPException) as exc:  # after it was sent
            raise OttowebError("bad_answer", f"{self.base_url}: {said(exc)}") from None
        try:
            return json.loads(content) if content else None
        except ValueError:
            raise OttowebError(
                "bad_answer", f"{url}: the answer is not JSON: {excerpt(content)}", status=status
            ) from None

    # --- sessions -------------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str | None = None,
        *,
        title: str | None = None,
        workspace: str | None = None,
        x_budget: int | None = None,
        y_budget: int | None = None,
        protected_share: float | None = None,
    ) -> SessionOut:
        body = _given(
            id=session_id,
            title=title,
            workspace=workspace,
            x_budget=x_budget,
            y_budget=y_budget,
            protected_share=protected_share,
        )
        return cast(SessionOut, self._call("create_session", body))

    def list_sessions(
        self, *, q: str | None = None, limit: int | None = None, offset: int | None = None
    ) -> SessionListOut:
        return cast(
            SessionListOut, self._call("list_sessions", query={"q": q, "limit": limit, "offset": offset})
        )

    def get_session(self, session_id: str) -> SessionDetailOut:
        return cast(SessionDetailOut, self._call("get_session", sid=session_id))

    def delete_session(self, session_id: str) -> None:
        self._call("delete_session", sid=session_id)

    def export_session(self, session_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._call("export_session", sid=session_id))

    def import_session(self, document: dict[str, Any], *, id: str | None = None) -> SessionOut:  # noqa: A002
        return cast(SessionOut, self._call("import_session", document, query={"id": id}))

    # --- items, context, recall -----------------------------------------------------------------

    def append(
        self,
        session_id: str,
        role: Literal["user", "assistant", "tool", "system"],
        text: str,
        *,
        kind: Literal["history", "context"] | None = None,
        protected: bool | None = None,
        name: str | None = None,
        occurred_at: str | datetime | None = None,
        meta: dict[str, Any] | None = None,
        pinned: bool | None = None,
    ) -> AppendOut:
        """`occurred_at`: ISO 8601 with an offset, or a datetime that has one."""
        body = _given(
            role=role,
            text=text,
            kind=kind,
            protected=protected,
            name=name,
            occurred_at=moment(occurred_at, "occurred_at"),
            meta=meta,
            pinned=pinned,
        )
        return cast(AppendOut, self._call("append", body, sid=session_id))

    def append_batch(self, session_id: str, items: list[Turn]) -> BatchOut:
        """All of `items` or none; an item's `occurred_at` may be a datetime that has an offset."""
        sent = [
            {**item, "occurred_at": moment(item["occurred_at"], f"items.{n}.occurred_at")}
            if isinstance(item.get("occurred_at"), datetime)
            else item
            for n, item in enumerate(items)
        ]
        return cast(BatchOut, self._call("append_batch", {"items": sent}, sid=session_id))

    def pin(self, session_id: str, position: int, *, pinned: bool = True) -> TurnOut:
        """Keep the history turn at `position` verbatim in the view until unpinned (`pinned=False`);
        the turn. Past the session's cap: OttowebError `too_many_pins`."""
        return cast(TurnOut, self._call("pin", {"pinned": pinned}, sid=session_id, position=position))

    def pop(self, session_id: str) -> TurnOut | None:
        """Take the newest turn back, as if it had never been appended; None when the session holds
        no turn. A turn compacted into the summary stays: OttowebError `conflict`."""
        return cast(PoppedOut, self._call("pop", sid=session_id))["item"]

    def context(self, session_id: str, *, kind: Literal["history"] | None = None) -> ContextOut:
        """The prompt view. Tool output (`kind="context"` items) never enters it: `recall` finds it."""
        return cast(ContextOut, self._call("context", query={"kind": kind}, sid=session_id))

    def recall(
        self,
        session_id: str,
        query: str,
        *,
        kind: Literal["history", "context", "all"] | None = None,
        match: Literal["semantic", "keyword"] | None = None,
        policy: Literal["default", "procedural"] | None = None,
        max_tokens: int | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        rules_off: Sequence[RuleName] | None = None,
    ) -> RecallOut:
        """`rules_off`: ranking rules to switch off for this recall (the server's docs/recall.md);
        `since`, `until`: ISO 8601 with an offset, or datetimes that have one."""
        body = _given(
            query=query,
            kind=kind,
            match=match,
            policy=policy,
            max_tokens=max_tokens,
            since=moment(since, "since"),
            until=moment(until, "until"),
            rules_off=list(rules_off) if rules_off is not None else None,
        )
        return cast(RecallOut, self._call("recall", body, sid=session_id))

    def memory_action(
        self,
        session_id: str,
        action: Literal["compact", "summary", "reset"],
        *,
        mode: Literal["summary", "all"] | None = None,
    ) -> dict[str, Any]:
        """compact → {"removed"}, summary → {"count"}, reset (mode summary|all) → {"reset"}."""
        return cast(
            dict[str, Any], self._call("memory_action", _given(action=action, mode=mode), sid=session_id)
        )

    def compact(self, session_id: str) -> int:
        """Compact now; how many raw items left the view."""
        return int(self.memory_action(session_id, "compact")["removed"])

    # --- jobs -----------------------------------------------------------------------------------

    def reembed(self, session_id: str, *, model: str | None = None) -> str:
        """Queue a re-embedding of the session; its job id."""
        return str(self._call("reembed", _given(model=model), sid=session_id)["job_id"])

    def get_job(self, job_id: str) -> JobOut:
        return cast(JobOut, self._call("get_job", job_id=job_id))

    # --- audit trail ----------------------------------------------------------------------------

    def audit(
        self, session: str | None = None, *, limit: int | None = None, offset: int | None = None
    ) -> AuditListOut:
        """Your state-changing calls (API, dashboard and MCP), newest first, each with its `status`
        and `outcome` (ok, refused or error); `session` narrows them to that session id's."""
        query = {"session": session, "limit": limit, "offset": offset}
        return cast(AuditListOut, self._call("audit", query=query))

    # --- lessons --------------------------------------------------------------------------------

    def record_error(
        self,
        tool: str,
        error: str,
        action: str,
        *,
        outcome: Literal["resolved", "failed", "abandoned"] = "resolved",
        context: str | None = None,
    ) -> StoredRecordOut | NotStoredOut:
        """The record (`stored` true), or why nothing was stored (`stored` false, `reason`): test
        `answer["stored"]` before reading either's fields."""
        body = _given(tool=tool, error=error, action=action, outcome=outcome, context=context)
        return cast("StoredRecordOut | NotStoredOut", self._call("record_error", body))

    def list_errors(
        self,
        *,
        tool: str | None = None,
        q: str | None = None,
        match: Literal["semantic", "keyword"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> RecordListOut:
        query = {"tool": tool, "q": q, "match": match, "limit": limit, "offset": offset}
        return cast(RecordListOut, self._call("list_errors", query=query))

    def update_error(self, record_id: int, action: str) -> RecordOut:
        return cast(RecordOut, self._call("update_error", {"action": action}, record_id=record_id))

    def delete_error(self, record_id: int) -> None:
        self._call("delete_error", record_id=record_id)

    def related_errors(
        self,
        tool: str,
        error: str,
        *,
        limit: int | None = None,
        match: Literal["semantic", "keyword"] | None = None,
    ) -> RelatedOut:
        return cast(
            RelatedOut, self._call("related_errors", _given(tool=tool, error=error, limit=limit, match=match))
        )

    # --- notes (scoped memory) ------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        key: str | None = None,
        app_name: str | None = None,
        domain: str | None = None,
        conversation_id: str | None = None,
    ) -> RememberOut:
        body = {"content": content, **_given(key=key), **_scope(app_name, domain, conversation_id)}
        return cast(RememberOut, self._call("remember", body))

    def recall_notes(
        self,
        query: str,
        *,
        app_name: str | None = None,
        domain: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
    ) -> ScopedRecallOut:
        body = {"query": query, **_given(limit=limit), **_scope(app_name, domain, conversation_id)}
        return cast(ScopedRecallOut, self._call("recall_notes", body))

    def list_notes(
        self,
        *,
        app_name: str | None = None,
        domain: str | None = None,
        conversation_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> NoteListOut:
        query = {**_scope(app_name, domain, conversation_id), "limit": limit, "offset": offset}
        return cast(NoteListOut, self._call("list_notes", query=query))

    def delete_scope(
        self, *, app_name: str | None = None, domain: str | None = None, conversation_id: str | None = None
    ) -> DeletedScopeOut:
        return cast(
            DeletedScopeOut, self._call("delete_scope", query=_scope(app_name, domain, conversation_id))
        )

    def list_scopes(self) -> ScopeListOut:
        return cast(ScopeListOut, self._call("list_scopes"))

    def get_note(self, note_id: int) -> StoredNoteOut:
        return cast(StoredNoteOut, self._call("get_note", note_id=note_id))

    def delete_note(self, note_id: int) -> None:
        self._call("delete_note", note_id=note_id)

    # --- in-run compaction ----------------------------------------------------------------------

    def fit_run(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        session: str | None = None,
        last_input_tokens: int | None = None,
        error: ContextLengthError | None = None,
        previous_model: str | None = None,
        related_errors: bool | None = None,
    ) -> FitOut:
        """The run's transcript (OpenAI chat messages), fitted to `model`'s window ("vendor:model") by
        the server's compaction stages: send the model `answer["messages"]`, before each call.

        `last_input_tokens`: the prompt size the provider reported for the last call. `error`: the
        provider refused the last send as too long (`{"kind": "context_length", "message": its
        words}`, `"limit"` when known); the limit is learned. `previous_model`: the model of the last
        call, when it changed. With `session`, every message rewritten or dropped is stored in its
        context tier (recall with `kind="context"`). `related_errors=False`: no recorded fixes for a
        failed last tool result. A transcript the provider would refuse is OttowebError `invalid`
        naming the field."""
        body = _given(
            session=session,
            model=model,
            messages=list(messages),
            last_input_tokens=last_input_tokens,
            error=error,
            previous_model=previous_model,
            related_errors=related_errors,
        )
        return cast(FitOut, self._call("fit_run", body))

    def model_windows(self, *, model: str | None = None) -> WindowsOut:
        """Every model's context window and where it comes from (`table`, `learned` from one of your
        runs' overflow errors, or `default`); with `model` ("vendor:model"), that model's alone."""
        return cast(WindowsOut, self._call("model_windows", query={"model": model}))

    def learned_limits(self) -> LearnedListOut:
        """The windows your runs have learned from a provider's overflow error (`fit_run(error=…)`),
        by model, each with when it was last lowered; nobody else's."""
        return cast(LearnedListOut, self._call("learned_limits"))

    def clear_learned_limit(self, *, model: str) -> None:
        """Forget the limit your runs learned for `model` ("vendor:model"): the table's window (or the
        default) applies to them again. None learned for it: OttowebError `not_found`."""
        self._call("clear_learned_limit", query={"model": model})
