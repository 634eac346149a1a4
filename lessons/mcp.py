"""Error memory's MCP tools: record_error and find_related_errors, each a call of the same service
as its REST twin (lessons/api.py). memory's MCP server serves them (memory/hooks.py): they take
the caller it names, are audited and refused in its words like every tool of it."""

from __future__ import annotations

from typing import Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from pydantic import Field

from memory.mcp.arguments import ToolArguments, strict_tool
from memory.mcp.calls import Caller, run
from memory.mcp.tools import READ, WRITE, Who

from . import services
from .schemas import RecordOut
from .services import MAX_RELATED


class RecordErrorArguments(ToolArguments):
    tool: str = Field(description="the tool that failed, e.g. 'bash' or 'http.get'")
    error: str = Field(description="the error message it gave")
    action: str = Field(description="what fixed it, so it can be done directly next time")
    outcome: Literal["resolved", "failed", "abandoned"] = Field(
        "resolved", description="only resolved failures are stored"
    )


class FindRelatedErrorsArguments(ToolArguments):
    tool: str = Field(description="the tool that just failed")
    error: str = Field(description="its error message")
    limit: int = Field(MAX_RELATED, ge=1, le=MAX_RELATED)


def tools(who: Who) -> list[Tool]:
    """Error memory's MCP tools, served by memory's MCP server (registered in apps.py)."""

    def record_error(args: RecordErrorArguments, ctx: Context) -> dict[str, Any]:
        """Record a tool failure and the action that resolved it. Kept 90 days (longer while it keeps
        being found), for find_related_errors to suggest when the tool fails the same way again."""

        def work(caller: Caller) -> dict[str, Any]:
            done = services.record_error(
                user=caller.user, tool=args.tool, error=args.error, action=args.action, outcome=args.outcome
            )
            if done.record is None:
                return {"stored": False, "reason": done.reason}
            return {"stored": True, "record": RecordOut.model_validate(done.record).model_dump(mode="json")}

        return run(lambda: who(ctx), "record_error", work)

    def find_related_errors(args: FindRelatedErrorsArguments, ctx: Context) -> dict[str, Any]:
        """Before retrying a failed tool call, look up how the same failure was fixed before: up to 3
        recorded errors of that tool, best first, each with the action that resolved it."""

        def work(caller: Caller) -> dict[str, Any]:
            ranked = services.find_related_errors(
                user=caller.user, tool=args.tool, error=args.error, limit=args.limit
            )
            records = [RecordOut.model_validate(r).model_dump(mode="json") for r in ranked.records]
            return {"related_errors": records, "match": ranked.match, "degraded": ranked.degraded}

        return run(lambda: who(ctx), "find_related_errors", work)

    return [
        strict_tool(record_error, RecordErrorArguments, WRITE),
        strict_tool(find_related_errors, FindRelatedErrorsArguments, READ),
    ]
