"""The MCP tools, one function each, each a call of the same service as its REST twin (docs/api.md).

`build_server(identify)` registers them on one MCPServer; `identify` says whose call it is (the
HTTP transport's bearer token, or OTTO_TOKEN for stdio). No tool takes a user, token or owner
argument: nothing a model writes can name another user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread
from django.db import close_old_connections
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import ValidationError
from pydantic_core import to_jsonable_python

import ottoweb
from memory import hooks, services
from memory.answers import RecallOut, recalled, remembered, stored_note
from memory.reads import session_context, session_summary, turn_dict
from memory.recall import recall as recall_passages
from memory.services import notes as scoped
from memory.services.sessions import get_user_session, matching_sessions
from ottoweb.errors import Conflict, NotFound

from .arguments import (
    SCOPE_NAMES,
    AppendTurnsArguments,
    ForgetNoteArguments,
    ListNotesArguments,
    ListSessionsArguments,
    NoArguments,
    PinTurnArguments,
    RecallArguments,
    RecallNotesArguments,
    RememberArguments,
    ResetSessionArguments,
    SessionArguments,
    strict_tool,
)
from .calls import Caller, Refused, audit_call, invalid_arguments, refusal_result, run

INSTRUCTIONS = (
    "ottoweb is long-term memory for this conversation and for what you learn across conversations. "
    "Send every turn with append_turns; read get_context for what your prompt should hold; use recall "
    "for anything older. Keep durable facts with remember / recall_notes, and record a tool failure you "
    "fixed with record_error so find_related_errors can suggest the fix next time."
)

READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# A write that may be repeated to the same effect (pin, unpin).
SET = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
# A removal that takes another turn each time it is called.
TAKE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

Who = Callable[[Context], Caller]


def _json(value: Any) -> Any:
    return to_jsonable_python(value)


def _session_tools(who: Who) -> list[Tool]:
    def append_turns(args: AppendTurnsArguments, ctx: Context) -> dict[str, Any]:
        """Store turns of the conversation, oldest first (up to 1,000 a call). Send every user, assistant
        and tool turn as it happens: older turns are summarised automatically and stay recallable word
        for word. The session is created on first use. Each turn: role (user, assistant, tool, system),
        text, optional name (who spoke), occurred_at (ISO 8601 with offset) and pinned (true: keep
        it word for word in get_context until unpinned, for what must never be summarised). The
        answer lists each turn's position, kind and hash, in the order sent (pin_turn takes a
        history turn's position; context turns are numbered apart)."""

        def work(caller: Caller) -> dict[str, Any]:
            services.check_session_id(args.session, field="session")
            items = [
                services.NewItem(
                    role=t.role,
                    text=t.text,
                    kind=t.kind,
                    protected=t.protected,
                    name=t.name,
                    occurred_at=t.occurred_at,
                    meta=t.meta,
                    pinned=t.pinned,
                )
                for t in args.turns
            ]
            # The batch limits of POST …/items/batch, before anything is written.
            services.check_batch(items, field="turns")
            created = False
            try:
                row = get_user_session(caller.user, args.session)
            except NotFound:
                created = True
                try:
                    row = services.create_session(user=caller.user, sid=args.session)
                except Conflict:  # created meanwhile by a concurrent call
                    row = get_user_session(caller.user, args.session)
            done = services.append_items(session=row, items=items, field="turns")
            return {
                "session": args.session,
                "created": created,
                "appended": len(done),
                "turns": [{"position": o.position, "kind": o.kind, "hash": o.hash} for o in done],
                "compaction_jobs": [o.compaction["job_id"] for o in done if o.compaction],
            }

        return run(lambda: who(ctx), "append_turns", work, session=args.session)

    def pin_turn(args: PinTurnArguments, ctx: Context) -> dict[str, Any]:
        """Pin a turn so get_context keeps it word for word, however old it gets, until you unpin it
        (pinned=false): for instructions or facts that must never be summarised. Pin few: a session's
        pins are capped (a number of turns, and a share of its memory budget); past the cap the call
        is refused."""

        def work(caller: Caller) -> dict[str, Any]:
            found = get_user_session(caller.user, args.session)
            item = services.set_pinned(session=found, position=args.position, pinned=args.pinned)
            return {"session": args.session, **_json(turn_dict(item))}

        return run(lambda: who(ctx), "pin_turn", work, session=args.session)

    def pop_turn(args: SessionArguments, ctx: Context) -> dict[str, Any]:
        """Take back the newest turn of the session, as if it had never been sent (a retried or
        cancelled step); the turn, or turn null when there is none. A turn already compacted into
        the summary stays: the call is refused."""

        def work(caller: Caller) -> dict[str, Any]:
            item = services.pop_last_item(session=get_user_session(caller.user, args.session))
            return {"session": args.session, "turn": None if item is None else _json(turn_dict(item))}

        return run(lambda: who(ctx), "pop_turn", work, session=args.session)

    def get_context(args: SessionArguments, ctx: Context) -> dict[str, Any]:
        """What your prompt should hold for this session, as one text: the rolling summary's cited
        bullets (oldest), then recent raw turns, newest last; with its token counts and budgets. Anything
        not in it is still stored: find it with recall."""

        def work(caller: Caller) -> dict[str, Any]:
            view = session_context(get_user_session(caller.user, args.session), "history")
            return {
                "session": args.session,
                "text": view["text"],
                "tokens": view["tokens"],
                "budgets": view["budgets"],
                "bullets": len(view["bullets"]),
                "raw_turns": len(view["y_raw"]) + len(view["x"]),
                "held_back": view["held_back"],
                "over_budget": view["over_budget"],
            }

        return run(lambda: who(ctx), "get_context", work, session=args.session)

    def recall(args: RecallArguments, ctx: Context) -> dict[str, Any]:
        """Find earlier passages of this session that answer a query, best first, each hit with its
        neighbouring turns, plus the summary bullets that cite them. Use it for anything older than
        what get_context shows: earlier facts, decisions, names, numbers. since / until (ISO 8601 with
        an offset) keep only turns that happened in that span."""

        def work(caller: Caller) -> dict[str, Any]:
            found = recall_passages(
                get_user_session(caller.user, args.session),
                query=args.query,
                kind=args.kind,
                match=args.match,
                max_tokens=args.max_tokens,
                since=args.since,
                until=args.until,
            )
            # The REST recall's answer, shaped as that operation documents it.
            return RecallOut.model_validate(found).model_dump(mode="json")

        return run(lambda: who(ctx), "recall", work, session=args.session)

    def list_sessions(args: ListSessionsArguments, ctx: Context) -> dict[str, Any]:
        """Your sessions, most recently used first: id, title, turns, token counts; `count` is how
        many match, and `offset` pages past the first `limit`."""

        def work(caller: Caller) -> dict[str, Any]:
            rows = matching_sessions(caller.user, args.q)
            page = rows.with_totals().order_by("-updated_at", "-id")[args.offset : args.offset + args.limit]
            return {"items": _json([session_summary(s) for s in page]), "count": rows.count()}

        return run(lambda: who(ctx), "list_sessions", work)

    def compact(args: SessionArguments, ctx: Context) -> dict[str, Any]:
        """Summarise the session's older turns now into cited bullets (normally automatic). The raw
        turns stay stored and recallable; only the prompt view gets shorter."""

        def work(caller: Caller) -> dict[str, Any]:
            done = services.memory_action(
                session=get_user_session(caller.user, args.session), action="compact"
            )
            return {"session": args.session, **done}

        return run(lambda: who(ctx), "compact", work, session=args.session)

    def reset_session(args: ResetSessionArguments, ctx: Context) -> dict[str, Any]:
        """Clear the session's memory. Cannot be undone; only when the user asks for it."""

        def work(caller: Caller) -> dict[str, Any]:
            found = get_user_session(caller.user, args.session)
            return {
                "session": args.session,
                **services.memory_action(session=found, action="reset", mode=args.mode),
            }

        return run(lambda: who(ctx), "reset_session", work, session=args.session)

    return [
        strict_tool(append_turns, AppendTurnsArguments, WRITE),
        strict_tool(pin_turn, PinTurnArguments, SET),
        strict_tool(pop_turn, SessionArguments, TAKE),
        strict_tool(get_context, SessionArguments, READ),
        strict_tool(recall, RecallArguments, READ),
        strict_tool(list_sessions, ListSessionsArguments, READ),
        strict_tool(compact, SessionArguments, WRITE),
        strict_tool(reset_session, ResetSessionArguments, DESTROY),
    ]


def _note_tools(who: Who) -> list[Tool]:
    def remember(args: RememberArguments, ctx: Context) -> dict[str, Any]:
        """Keep a note for later, in one scope: app scope (app_name + domain) for what holds across
        conversations, or conversation scope (conversation_id) for this one. With a key, a note of that
        key in that scope is replaced. Answers with the scope used (projectKey) and the note id."""

        def work(caller: Caller) -> dict[str, Any]:
            done = scoped.remember_note(
                user=caller.user,
                content=args.content,
                key=args.key,
                app_name=args.app_name,
                domain=args.domain,
                conversation_id=args.conversation_id,
                names=SCOPE_NAMES,
            )
            return _json(remembered(done))

        return run(lambda: who(ctx), "remember", work)

    def recall_notes(args: RecallNotesArguments, ctx: Context) -> dict[str, Any]:
        """Find the notes of one scope (the same arguments as remember) that best answer a query. If
        search is unavailable the answer says so (degraded) rather than failing."""

        def work(caller: Caller) -> dict[str, Any]:
            found = scoped.recall_notes(
                user=caller.user,
                query=args.query,
                app_name=args.app_name,
                domain=args.domain,
                conversation_id=args.conversation_id,
                limit=args.limit,
                names=SCOPE_NAMES,
            )
            return _json(recalled(found))

        return run(lambda: who(ctx), "recall_notes", work)

    def list_notes(args: ListNotesArguments, ctx: Context) -> dict[str, Any]:
        """Your notes, newest first: of one scope when one is named, else of every scope. Each has the
        id forget_note takes."""

        def work(caller: Caller) -> dict[str, Any]:
            rows, count = scoped.list_notes(
                user=caller.user,
                app_name=args.app_name,
                domain=args.domain,
                conversation_id=args.conversation_id,
                limit=args.limit,
                offset=args.offset,
                names=SCOPE_NAMES,
            )
            return {"items": _json([stored_note(n) for n in rows]), "count": count}

        return run(lambda: who(ctx), "list_notes", work)

    def forget_note(args: ForgetNoteArguments, ctx: Context) -> dict[str, Any]:
        """Delete one note for good. Only when it is wrong or the user asks."""

        def work(caller: Caller) -> dict[str, Any]:
            scoped.delete_note(note=scoped.get_note(user=caller.user, note_id=args.note_id))
            return {"deleted": args.note_id}

        return run(lambda: who(ctx), "forget_note", work, object_ref=f"note:{args.note_id}")

    return [
        strict_tool(remember, RememberArguments, WRITE),
        strict_tool(recall_notes, RecallNotesArguments, READ),
        strict_tool(list_notes, ListNotesArguments, READ),
        strict_tool(forget_note, ForgetNoteArguments, DESTROY),
    ]


def _whoami(who: Who) -> Tool:
    def whoami(args: NoArguments, ctx: Context) -> dict[str, Any]:
        """Who this memory belongs to: the user of the token the connection carries."""

        def work(caller: Caller) -> dict[str, Any]:
            return {"user": caller.user.username, "token": caller.token.prefix, "transport": caller.transport}

        return run(lambda: who(ctx), "whoami", work)

    return strict_tool(whoami, NoArguments, READ)


class OttoServer(MCPServer):
    """MCPServer whose tools answer every refusal in the REST API's words (`calls.refusal_result`),
    and audit the refusals of their arguments (made by the SDK before a tool runs) too."""

    def __init__(self, identify: Who, tools: list[Tool]) -> None:
        super().__init__("ottoweb", version=ottoweb.__version__, instructions=INSTRUCTIONS, tools=tools)
        self.identify = identify

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, Refused):
                return refusal_result(cause.refusal)
            if not isinstance(cause, ValidationError):
                raise
            refusal = invalid_arguments(cause)
            if context is not None:
                session = arguments.get("session")
                sid = session if isinstance(session, str) else ""

                def write() -> None:
                    close_old_connections()
                    try:
                        audit_call(self.identify(context), name, refusal.status, session=sid)
                    finally:
                        close_old_connections()

                await anyio.to_thread.run_sync(write)
            return refusal_result(refusal)


def build_server(identify: Who) -> MCPServer:
    """The ottoweb MCP server: every tool, each call made as the caller `identify` names."""
    # After the notes tools, those of the apps built on memory (lessons' record_error and
    # find_related_errors, memory/hooks.py).
    added = [tool for tools_of in hooks.mcp_tools() for tool in tools_of(identify)]
    tools = [*_session_tools(identify), *_note_tools(identify), *added, _whoami(identify)]
    return OttoServer(identify, tools)
