"""The MCP tools, one function each, each a call of the same service as its REST twin (../shared/API.md).

`build_server(identify)` registers them on one MCPServer; `identify` says whose call it is (the
HTTP transport's bearer token, or OTTO_TOKEN for stdio). No tool takes a user, token or owner
argument: nothing a model writes can name another user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import anyio.to_thread
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError
from pydantic_core import to_jsonable_python

from lessons import services as lessons
from lessons.schemas import ErrorIn, RecordOut, RelatedIn
from memory import services
from memory.api.notes import NoteListQuery, RememberIn, ScopedRecallIn, recalled, remembered, stored_note
from memory.api.schemas import ItemIn, MemoryActionIn, PinIn, RecallIn, RecallOut
from memory.api.sessions import ListParams, checked_recall, new_items, user_session
from memory.models import Session
from memory.reads import session_context, session_summary, turn_dict
from memory.services import notes as scoped
from ottoweb.errors import Conflict

from .calls import Caller, audit_call, parsed, run

INSTRUCTIONS = (
    "ottoweb is long-term memory for this conversation and for what you learn across conversations. "
    "Send every turn with append_turns; read get_context for what your prompt should hold; use recall "
    "for anything older. Keep durable facts with remember / recall_notes, and record a tool failure you "
    "fixed with record_error so find_related_errors can suggest the fix next time."
)

READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)
# A write that may be repeated to the same effect (pin, unpin).
SET = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
DESTROY = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False)

SessionId = Annotated[
    str,
    Field(description="your session id: 1-128 letters, digits, '.', '_', ':' or '-' (one per conversation)"),
]
AppName = Annotated[str | None, Field(description="app scope: the application's name (give domain too)")]
Domain = Annotated[str | None, Field(description="app scope: the host name the app serves, e.g. example.com")]
ConversationId = Annotated[str | None, Field(description="conversation scope: the conversation's id (alone)")]


def _json(value: Any) -> Any:
    return to_jsonable_python(value)


def _session_tools(server: MCPServer, who: Callable[[Context], Caller]) -> None:
    @server.tool(annotations=WRITE)
    def append_turns(
        session: SessionId,
        turns: Annotated[list[ItemIn], Field(min_length=1, max_length=1000)],
        ctx: Context,
    ) -> dict[str, Any]:
        """Store turns of the conversation, oldest first (up to 1,000 a call). Send every user, assistant
        and tool turn as it happens: older turns are summarised automatically and stay recallable word
        for word. The session is created on first use. Each turn: role (user, assistant, tool, system),
        text, optional name (who spoke), occurred_at (ISO 8601 with offset) and pinned (true: keep
        it word for word in get_context until unpinned, for what must never be summarised)."""

        def work(caller: Caller) -> dict[str, Any]:
            services.check_session_id(session)
            items = new_items(turns)
            services.check_batch(items)  # the batch limits of POST …/items/batch, before anything is written
            row = Session.objects.for_user(caller.user).filter(sid=session).first()
            created = row is None
            if row is None:
                try:
                    row = services.create_session(user=caller.user, sid=session)
                except Conflict:  # created meanwhile by a concurrent call
                    row = user_session(caller.user, session)
            done = services.append_items(session=row, items=items)
            return {
                "session": session,
                "created": created,
                "appended": len(done),
                "positions": [done[0].position, done[-1].position],
                "compaction_jobs": [o.compaction["job_id"] for o in done if o.compaction],
            }

        return run(lambda: who(ctx), "append_turns", work, session=session)

    @server.tool(annotations=SET)
    def pin_turn(
        session: SessionId,
        position: Annotated[int, Field(description="the turn's position (append_turns answers them)")],
        ctx: Context,
        pinned: Annotated[bool, Field(description="true: pin it; false: unpin it")] = True,
    ) -> dict[str, Any]:
        """Pin a turn so get_context keeps it word for word, however old it gets, until you unpin it
        (pinned=false): for instructions or facts that must never be summarised. Pin few: a session's
        pins are capped (a number of turns, and a share of its memory budget); past the cap the call
        is refused."""

        def work(caller: Caller) -> dict[str, Any]:
            body = parsed(PinIn, {"pinned": pinned})
            found = user_session(caller.user, session)
            item = services.set_pinned(session=found, position=position, pinned=body.pinned)
            return {"session": session, **_json(turn_dict(item))}

        return run(lambda: who(ctx), "pin_turn", work, session=session)

    @server.tool(annotations=READ)
    def get_context(session: SessionId, ctx: Context) -> dict[str, Any]:
        """What your prompt should hold for this session, as one text: the rolling summary's cited
        bullets (oldest), then recent raw turns, newest last; with its token counts and budgets. Anything
        not in it is still stored: find it with recall."""

        def work(caller: Caller) -> dict[str, Any]:
            view = session_context(user_session(caller.user, session), "history")
            return {
                "session": session,
                "text": view["text"],
                "tokens": view["tokens"],
                "budgets": view["budgets"],
                "bullets": len(view["bullets"]),
                "raw_turns": len(view["y_raw"]) + len(view["x"]),
                "held_back": view["held_back"],
                "over_budget": view["over_budget"],
            }

        return run(lambda: who(ctx), "get_context", work, session=session)

    @server.tool(annotations=READ)
    def recall(
        session: SessionId,
        query: Annotated[str, Field(description="what you want to remember, in words")],
        ctx: Context,
        match: Annotated[
            Literal["semantic", "keyword"],
            Field(description="semantic: by meaning (default); keyword: exact names, ids, error codes"),
        ] = "semantic",
        kind: Annotated[
            Literal["history", "context", "all"],
            Field(description="history: the conversation; context: stored tool output; all: both"),
        ] = "all",
        max_tokens: Annotated[int | None, Field(description="most tokens to return (default 3,000)")] = None,
    ) -> dict[str, Any]:
        """Find earlier passages of this session that answer a query, best first, each hit with its
        neighbouring turns, plus the summary bullets that cite them. Use it for anything older than
        what get_context shows: earlier facts, decisions, names, numbers."""

        def work(caller: Caller) -> dict[str, Any]:
            values: dict[str, Any] = {"query": query, "match": match, "kind": kind, "max_tokens": max_tokens}
            body = parsed(RecallIn, values)
            found = checked_recall(user_session(caller.user, session), body)
            return RecallOut.model_validate(found).model_dump(mode="json")

        return run(lambda: who(ctx), "recall", work, session=session)

    @server.tool(annotations=READ)
    def list_sessions(
        ctx: Context,
        q: Annotated[str, Field(max_length=200, description="words in the id or title; empty: all")] = "",
        limit: Annotated[int, Field(ge=1, le=500)] = 20,
    ) -> dict[str, Any]:
        """Your sessions, most recently used first: id, title, turns, token counts."""

        def work(caller: Caller) -> dict[str, Any]:
            params = parsed(ListParams, {"q": q, "limit": limit})
            rows = Session.objects.for_user(caller.user).matching(params.q)
            page = rows.with_totals().order_by("-updated_at", "-id")[: params.limit]
            return {"items": _json([session_summary(s) for s in page]), "count": rows.count()}

        return run(lambda: who(ctx), "list_sessions", work)

    @server.tool(annotations=WRITE)
    def compact(session: SessionId, ctx: Context) -> dict[str, Any]:
        """Summarise the session's older turns now into cited bullets (normally automatic). The raw
        turns stay stored and recallable; only the prompt view gets shorter."""

        def work(caller: Caller) -> dict[str, Any]:
            done = services.memory_action(session=user_session(caller.user, session), action="compact")
            return {"session": session, **done}

        return run(lambda: who(ctx), "compact", work, session=session)

    @server.tool(annotations=DESTROY)
    def reset_session(
        session: SessionId,
        mode: Annotated[
            Literal["summary", "all"],
            Field(description="summary: keep the rolling summary, drop raw turns; all: forget everything"),
        ],
        ctx: Context,
    ) -> dict[str, Any]:
        """Clear the session's memory. Cannot be undone; only when the user asks for it."""

        def work(caller: Caller) -> dict[str, Any]:
            body = parsed(MemoryActionIn, {"action": "reset", "mode": mode})
            found = user_session(caller.user, session)
            return {
                "session": session,
                **services.memory_action(session=found, action="reset", mode=body.mode),
            }

        return run(lambda: who(ctx), "reset_session", work, session=session)


def _note_tools(server: MCPServer, who: Callable[[Context], Caller]) -> None:
    @server.tool(annotations=WRITE)
    def remember(
        content: Annotated[str, Field(description="the fact, preference or decision to keep, in words")],
        ctx: Context,
        key: Annotated[str | None, Field(description="a name for it: the same key replaces the note")] = None,
        app_name: AppName = None,
        domain: Domain = None,
        conversation_id: ConversationId = None,
    ) -> dict[str, Any]:
        """Keep a note for later, in one scope: app scope (app_name + domain) for what holds across
        conversations, or conversation scope (conversation_id) for this one. With a key, a note of that
        key in that scope is replaced. Answers with the scope used (projectKey) and the note id."""

        def work(caller: Caller) -> dict[str, Any]:
            values = {"content": content, "key": key, "appName": app_name, "domain": domain}
            body = parsed(RememberIn, {**values, "conversationId": conversation_id})
            done = scoped.remember_note(
                user=caller.user,
                content=body.content,
                key=body.key,
                app_name=body.appName,
                domain=body.domain,
                conversation_id=body.conversationId,
            )
            return _json(remembered(done))

        return run(lambda: who(ctx), "remember", work)

    @server.tool(annotations=READ)
    def recall_notes(
        query: Annotated[str, Field(description="what you are looking for; empty: the newest notes")],
        ctx: Context,
        app_name: AppName = None,
        domain: Domain = None,
        conversation_id: ConversationId = None,
        limit: Annotated[int, Field(ge=1, le=scoped.MAX_RECALL)] = 5,
    ) -> dict[str, Any]:
        """Find the notes of one scope (the same arguments as remember) that best answer a query. If
        search is unavailable the answer says so (degraded) rather than failing."""

        def work(caller: Caller) -> dict[str, Any]:
            values = {"query": query, "appName": app_name, "domain": domain, "limit": limit}
            body = parsed(ScopedRecallIn, {**values, "conversationId": conversation_id})
            found = scoped.recall_notes(
                user=caller.user,
                query=body.query,
                app_name=body.appName,
                domain=body.domain,
                conversation_id=body.conversationId,
                limit=body.limit,
            )
            return _json(recalled(found))

        return run(lambda: who(ctx), "recall_notes", work)

    @server.tool(annotations=READ)
    def list_notes(
        ctx: Context,
        app_name: AppName = None,
        domain: Domain = None,
        conversation_id: ConversationId = None,
        limit: Annotated[int, Field(ge=1, le=scoped.MAX_PAGE)] = 20,
        offset: Annotated[int, Field(ge=0)] = 0,
    ) -> dict[str, Any]:
        """Your notes, newest first: of one scope when one is named, else of every scope. Each has the
        id forget_note takes."""

        def work(caller: Caller) -> dict[str, Any]:
            values = {"appName": app_name, "domain": domain, "conversationId": conversation_id}
            params = parsed(NoteListQuery, {**values, "limit": limit, "offset": offset})
            rows, count = scoped.list_notes(
                user=caller.user,
                app_name=params.appName,
                domain=params.domain,
                conversation_id=params.conversationId,
                limit=params.limit,
                offset=params.offset,
            )
            return {"items": _json([stored_note(n) for n in rows]), "count": count}

        return run(lambda: who(ctx), "list_notes", work)

    @server.tool(annotations=DESTROY)
    def forget_note(
        note_id: Annotated[int, Field(description="the note's id (list_notes)")], ctx: Context
    ) -> dict:
        """Delete one note for good. Only when it is wrong or the user asks."""

        def work(caller: Caller) -> dict[str, Any]:
            scoped.delete_note(note=scoped.get_note(user=caller.user, note_id=note_id))
            return {"deleted": note_id}

        return run(lambda: who(ctx), "forget_note", work, object_ref=f"note:{note_id}")


def _lesson_tools(server: MCPServer, who: Callable[[Context], Caller]) -> None:
    @server.tool(annotations=WRITE)
    def record_error(
        tool: Annotated[str, Field(description="the tool that failed, e.g. 'bash' or 'http.get'")],
        error: Annotated[str, Field(description="the error message it gave")],
        action: Annotated[str, Field(description="what fixed it, so it can be done directly next time")],
        ctx: Context,
        outcome: Annotated[
            Literal["resolved", "failed", "abandoned"],
            Field(description="only resolved failures are stored"),
        ] = "resolved",
    ) -> dict[str, Any]:
        """Record a tool failure and the action that resolved it. Kept 90 days (longer while it keeps
        being found), for find_related_errors to suggest when the tool fails the same way again."""

        def work(caller: Caller) -> dict[str, Any]:
            body = parsed(ErrorIn, {"tool": tool, "error": error, "action": action, "outcome": outcome})
            done = lessons.record_error(
                user=caller.user, tool=body.tool, error=body.error, action=body.action, outcome=body.outcome
            )
            if done.record is None:
                return {"stored": False, "reason": done.reason}
            return {"stored": True, "record": RecordOut.model_validate(done.record).model_dump(mode="json")}

        return run(lambda: who(ctx), "record_error", work)

    @server.tool(annotations=READ)
    def find_related_errors(
        tool: Annotated[str, Field(description="the tool that just failed")],
        error: Annotated[str, Field(description="its error message")],
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=3)] = 3,
    ) -> dict[str, Any]:
        """Before retrying a failed tool call, look up how the same failure was fixed before: up to 3
        recorded errors of that tool, best first, each with the action that resolved it."""

        def work(caller: Caller) -> dict[str, Any]:
            body = parsed(RelatedIn, {"tool": tool, "error": error, "limit": limit})
            ranked = lessons.find_related_errors(
                user=caller.user, tool=body.tool, error=body.error, limit=body.limit
            )
            records = [RecordOut.model_validate(r).model_dump(mode="json") for r in ranked.records]
            return {"related_errors": records, "match": ranked.match, "degraded": ranked.degraded}

        return run(lambda: who(ctx), "find_related_errors", work)


class OttoServer(MCPServer):
    """MCPServer whose argument-schema refusals (made by the SDK before a tool runs) are audited too."""

    def __init__(self, identify: Callable[[Context], Caller]) -> None:
        super().__init__("ottoweb", instructions=INSTRUCTIONS)
        self.identify = identify

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if context is not None and isinstance(exc.__cause__, ValidationError):
                session = arguments.get("session")
                sid = session if isinstance(session, str) else ""

                def write() -> None:
                    close_old_connections()
                    try:
                        audit_call(self.identify(context), name, 422, session=sid)
                    finally:
                        close_old_connections()

                await anyio.to_thread.run_sync(write)
            raise


def build_server(identify: Callable[[Context], Caller]) -> MCPServer:
    """The ottoweb MCP server: every tool, each call made as the caller `identify` names."""
    server = OttoServer(identify)
    _session_tools(server, identify)
    _note_tools(server, identify)
    _lesson_tools(server, identify)

    @server.tool(annotations=READ)
    def whoami(ctx: Context) -> dict[str, Any]:
        """Who this memory belongs to: the user of the token the connection carries."""

        def work(caller: Caller) -> dict[str, Any]:
            return {"user": caller.user.username, "token": caller.token.prefix, "transport": caller.transport}

        return run(lambda: identify(ctx), "whoami", work)

    return server
