"""Each MCP tool's arguments, as a model of the tool's own (not the REST API's camelCase shapes).

Strict: an argument a tool does not take is refused (`recall(since=…)` is never silently dropped),
and nothing is coerced (a boolean or a string is never an id or a number, a number never a
string). Every string must be storable text and every number within the JSON number policy
(`ottoweb.schemas.check_storable`), as in a REST body. The limits are the services' own, checked
when the tool calls them, or the REST schemas' where those hold them (`max_length`, `ge`, `le`).

`strict_tool` registers a tool function `fn(args, ctx)` with its model as the SDK's argument model
and published input schema (`additionalProperties: false`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, field_validator

from memory.engine.types import MAX_NAME_CHARS
from memory.services import notes as scoped
from memory.services import scopes
from ottoweb.schemas import Moment, check_storable


class ToolArguments(ArgModelBase):
    """A tool's arguments: unknown ones refused, no type coerced, every value storable."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        check_storable(value)
        return value


SessionId = Annotated[
    str,
    Field(description="your session id: 1-128 letters, digits, '.', '_', ':' or '-' (one per conversation)"),
]
# How the tools spell a scope's arguments: services.scopes names them so when it refuses one.
SCOPE_NAMES = scopes.ScopeNames(app_name="app_name", conversation_id="conversation_id")

AppName = Annotated[str | None, Field(description="app scope: the application's name (give domain too)")]
Domain = Annotated[str | None, Field(description="app scope: the host name the app serves, e.g. example.com")]
ConversationId = Annotated[str | None, Field(description="conversation scope: the conversation's id (alone)")]


class Turn(ToolArguments):
    role: Literal["user", "assistant", "tool", "system"]
    text: str
    kind: Literal["history", "context"] = Field(
        "history",
        description="history: the conversation, in get_context (default); context: bulky tool output "
        "kept out of get_context, found by recall (kind context or all); never pinned",
    )
    protected: bool | None = Field(
        None, description="never summarised; default: true for a user's history turn, else false"
    )
    name: str = Field("", max_length=MAX_NAME_CHARS, description="who said it: a person's or an agent's name")
    occurred_at: Moment = Field(
        None, description="when it happened, ISO 8601 with an offset; default: when it arrives"
    )
    meta: dict[str, Any] | None = Field(
        None, description="your own JSON object (at most 4 KB), stored and returned verbatim, never ranked"
    )
    pinned: bool = Field(False, description="keep it word for word in get_context until unpinned")


class AppendTurnsArguments(ToolArguments):
    session: SessionId
    turns: list[Turn] = Field(min_length=1, max_length=1000)


class PinTurnArguments(ToolArguments):
    session: SessionId
    position: int = Field(
        description="a history turn's position, as append_turns answers it for a turn of kind history "
        "(or recall for a hit); context turns are numbered apart and cannot be pinned"
    )
    pinned: bool = Field(True, description="true: pin it; false: unpin it")


class SessionArguments(ToolArguments):
    session: SessionId


class RecallArguments(ToolArguments):
    session: SessionId
    query: str = Field(max_length=10_000, description="what you want to remember, in words")
    match: Literal["semantic", "keyword"] = Field(
        "semantic", description="semantic: by meaning (default); keyword: exact names, ids, error codes"
    )
    kind: Literal["history", "context", "all"] = Field(
        "all", description="history: the conversation; context: stored tool output; all: both"
    )
    max_tokens: int | None = Field(
        None, ge=1, le=200_000, description="most tokens to return (default 3,000)"
    )
    since: Moment = Field(
        None, description="only turns that happened at or after this time (ISO 8601 with an offset)"
    )
    until: Moment = Field(
        None, description="only turns that happened before this time (ISO 8601 with an offset)"
    )


class ListSessionsArguments(ToolArguments):
    q: str = Field(
        "", max_length=200, description="text in the id, title or workspace (any case); empty: all"
    )
    limit: int = Field(20, ge=1, le=500)
    offset: int = Field(0, ge=0, le=1_000_000_000, description="sessions to skip: the next page of count")


class ResetSessionArguments(ToolArguments):
    session: SessionId
    mode: Literal["summary", "all"] = Field(
        description="summary: keep the rolling summary, drop raw turns; all: forget everything"
    )


class RememberArguments(ToolArguments):
    content: str = Field(description="the fact, preference or decision to keep, in words")
    key: str | None = Field(None, description="a name for it: the same key replaces the note")
    app_name: AppName = None
    domain: Domain = None
    conversation_id: ConversationId = None


class RecallNotesArguments(ToolArguments):
    query: str = Field(description="what you are looking for; empty: the newest notes")
    app_name: AppName = None
    domain: Domain = None
    conversation_id: ConversationId = None
    limit: int = Field(5, ge=1, le=scoped.MAX_RECALL)


class ListNotesArguments(ToolArguments):
    app_name: AppName = None
    domain: Domain = None
    conversation_id: ConversationId = None
    limit: int = Field(20, ge=1, le=scoped.MAX_PAGE)
    offset: int = Field(0, ge=0, le=1_000_000_000)


class ForgetNoteArguments(ToolArguments):
    note_id: int = Field(description="the note's id (list_notes)")


class NoArguments(ToolArguments):
    pass


class StrictArguments(FuncMetadata):
    """The SDK's argument handling with the tool's own model: validated as sent (no JSON parsed out
    of a string argument, as the SDK does for clients that send `"[1, 2]"`), and handed to the tool
    whole, as `args`."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"args": self.arg_model.model_validate(arguments_to_validate)}


def strict_tool(fn: Callable[..., Any], arguments: type[ToolArguments], annotations: ToolAnnotations) -> Tool:
    """The tool `fn(args: arguments, ctx: Context)`, taking exactly `arguments`' fields.

    A refusal of them is the SDK's ToolError caused by pydantic's ValidationError, which the
    server answers in the REST API's words (`memory.mcp.tools.OttoServer.call_tool`).
    """
    tool = Tool.from_function(fn, annotations=annotations)
    metadata = tool.fn_metadata
    return tool.model_copy(
        update={
            "parameters": arguments.model_json_schema(by_alias=True),
            "fn_metadata": StrictArguments(
                arg_model=arguments,
                output_schema=metadata.output_schema,
                output_model=metadata.output_model,
                wrap_output=metadata.wrap_output,
            ),
        }
    )
