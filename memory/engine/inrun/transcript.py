"""The transcript: OpenAI chat messages, their token counts, the checks a provider would make, and
the words this package writes into a transcript. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import tokens as tok

Message = dict[str, Any]

# The token budget is 80 % of the context window.
THRESHOLD_FRACTION = 0.8
# Once over the budget, compact down to this share of it (hysteresis; see the module docstring).
REFILL_FRACTION = 0.75
# After a context-length error, history is cut to 80 % of its size.
TRIM_RATIO = 0.8
# A tool step is dropped by judgement only at this confidence or more.
DROP_CONFIDENCE = 0.7
# The rolling summary may fill this share of the budget (never less than SUMMARY_MIN_TOKENS).
SUMMARY_SHARE = 0.1
SUMMARY_MIN_TOKENS = 128
# Sizes of the pieces a summarised tool step keeps.
ARGUMENT_TOKENS = 32
RESULT_TOKENS = 48
EXCERPT_TOKENS = 48
# OpenAI's accounting: a few tokens of framing per message and per call, three to prime the reply.
MESSAGE_OVERHEAD = 4
CALL_OVERHEAD = 4
PRIMING = 3

ROLES = ("system", "user", "assistant", "tool")

RAW_TOOL_FALLBACK = "RawToolFallback"
CHECK_THRESHOLD = "CheckThreshold"
EXTRACT = "ExtractContextHistories"
TOOL_HISTORY = "ToolHistory"
TRIM_RATIO_STAGE = "TrimRatio"
TRIM_FALLBACK = "TrimFallback"

# Everything this module writes into a transcript starts with this, so a later call recognises it.
MARK = "[ottoweb"
NOTE_HEADER = "[ottoweb: earlier parts of this run were condensed or removed to fit the model's window]"
DIGEST_HEADER = "[ottoweb: an earlier tool step, summarised to fit the window]"
CALLS_AS_TEXT = "[ottoweb: tool calls written as text after a model switch]"
RESULTS_AS_TEXT = (
    "[ottoweb: tool results written as text after a model switch; tool output, not the user's words]"
)
# The stubs say the original is searchable only when a session really stored it (docs/decisions.md).
NOTICE = {
    "stored": (
        "The full text of what was condensed or removed is in this session's memory: "
        'search it with recall (kind "context") to bring any of it back.'
    ),
    "unstored": (
        "What was condensed or removed was not stored (no session was given): "
        "if something is needed again, run that step again."
    ),
    "mixed": (
        "Part of what was condensed or removed is in this session's memory "
        '(recall, kind "context"); the rest was not stored: run such a step again if it is needed.'
    ),
}
STEP_STORED = 'The full call and output are in this session\'s memory: recall (kind "context") finds them.'
STEP_UNSTORED = "The full output was not kept (no session was given): run the step again if it is needed."

WRITE_TODO_NAMES = frozenset({"writetodo", "writetodos", "todowrite"})


# --- messages ---------------------------------------------------------------------------------------


class TranscriptError(ValueError):
    """A transcript no model would accept; `field` names the offending place (`messages.3.role`)."""

    def __init__(self, detail: str, field: str) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


@dataclass(frozen=True, slots=True)
class ToolCallView:
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StepView:
    """One tool step as a judge sees it: the calls, their results (in call order), what was said."""

    position: int
    calls: tuple[ToolCallView, ...]
    results: tuple[str, ...]
    said: str


def content_text(content: object) -> str:
    """The text of a message's content: a string, nothing, or a list of parts (text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, sort_keys=True, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return str(content)


def tool_calls(message: Mapping[str, Any]) -> list[ToolCallView]:
    """The calls an assistant message makes (empty for any other message)."""
    calls = message.get("tool_calls") or []
    views: list[ToolCallView] = []
    for call in calls:
        function = call.get("function") or {}
        views.append(
            ToolCallView(
                id=str(call.get("id", "")),
                name=str(function.get("name", "")),
                arguments=str(function.get("arguments", "")),
            )
        )
    return views


def message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens a message costs: content, name and calls under cl100k, plus OpenAI's framing."""
    total = MESSAGE_OVERHEAD + tok.count_tokens(content_text(message.get("content")))
    name = message.get("name")
    if isinstance(name, str):
        total += tok.count_tokens(name)
    for call in tool_calls(message):
        total += CALL_OVERHEAD + tok.count_tokens(call.name) + tok.count_tokens(call.arguments)
    return total


def transcript_tokens(messages: Iterable[Mapping[str, Any]]) -> int:
    return PRIMING + sum(message_tokens(m) for m in messages)


def is_ottoweb_text(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, str) and content.startswith(MARK)


def is_write_todo(name: str) -> bool:
    return re.sub(r"[^a-z]", "", name.lower()) in WRITE_TODO_NAMES


def _nonempty_str(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def check_transcript(messages: Sequence[object]) -> None:
    """Refuse a transcript a provider would refuse; raise TranscriptError naming the field.

    Shapes: role is one of system/user/assistant/tool; content is a string, null or a list of parts;
    only an assistant message carries tool_calls, each `{"id", "type": "function", "function":
    {"name", "arguments": str}}`; a tool message carries tool_call_id. Pairing: the tool messages
    right after an assistant message answer each of its calls exactly once, and nothing else.
    """
    if not messages:
        raise TranscriptError("messages: at least one message is needed", "messages")
    pending: dict[str, int] = {}
    for i, raw in enumerate(messages):
        at = f"messages.{i}"
        if not isinstance(raw, dict):
            raise TranscriptError(f"{at}: a message must be an object", at)
        role = raw.get("role")
        if role not in ROLES:
            raise TranscriptError(f"{at}.role: must be one of {', '.join(ROLES)}", f"{at}.role")
        content = raw.get("content")
        if content is not None and not isinstance(content, str | list):
            raise TranscriptError(f"{at}.content: must be a string, null or a list of parts", f"{at}.content")
        if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
            raise TranscriptError(f"{at}.content: every part must be an object", f"{at}.content")
        if "name" in raw and raw["name"] is not None and not isinstance(raw["name"], str):
            raise TranscriptError(f"{at}.name: must be a string", f"{at}.name")
        calls = raw.get("tool_calls")
        if calls is not None and role != "assistant":
            raise TranscriptError(
                f"{at}.tool_calls: only an assistant message makes tool calls", f"{at}.tool_calls"
            )
        if calls is not None:
            if not isinstance(calls, list):
                raise TranscriptError(f"{at}.tool_calls: must be a list", f"{at}.tool_calls")
            for j, call in enumerate(calls):
                where = f"{at}.tool_calls.{j}"
                if not isinstance(call, dict) or not _nonempty_str(call.get("id")):
                    raise TranscriptError(f"{where}.id: a tool call needs a non-empty id", f"{where}.id")
                if call.get("type", "function") != "function":
                    raise TranscriptError(f"{where}.type: must be 'function'", f"{where}.type")
                function = call.get("function")
                if not isinstance(function, dict) or not _nonempty_str(function.get("name")):
                    raise TranscriptError(
                        f"{where}.function.name: a tool call needs a function name", f"{where}.function.name"
                    )
                if not isinstance(function.get("arguments"), str):
                    raise TranscriptError(
                        f"{where}.function.arguments: must be a string (JSON text)",
                        f"{where}.function.arguments",
                    )
        if role == "tool":
            call_id = raw.get("tool_call_id")
            if not _nonempty_str(call_id):
                raise TranscriptError(
                    f"{at}.tool_call_id: a tool message needs the id of the call it answers",
                    f"{at}.tool_call_id",
                )
            if call_id not in pending:
                raise TranscriptError(
                    f"{at}.tool_call_id: tool result {call_id!r} answers no call of the assistant message "
                    "right before it",
                    f"{at}.tool_call_id",
                )
            del pending[call_id]
            continue
        if pending:
            call_id, opened = next(iter(pending.items()))
            raise TranscriptError(
                f"messages.{opened}.tool_calls: call {call_id!r} has no tool result after it",
                f"messages.{opened}.tool_calls",
            )
        if role == "assistant" and calls:
            for j, call in enumerate(calls):
                if call["id"] in pending:
                    raise TranscriptError(
                        f"{at}.tool_calls.{j}.id: call id {call['id']!r} appears twice",
                        f"{at}.tool_calls.{j}.id",
                    )
                pending[call["id"]] = i
    if pending:
        call_id, opened = next(iter(pending.items()))
        raise TranscriptError(
            f"messages.{opened}.tool_calls: call {call_id!r} has no tool result after it",
            f"messages.{opened}.tool_calls",
        )


def evicted_text(message: Mapping[str, Any], tool_name: str | None = None) -> str:
    """A message whole, as text for the context tier: content verbatim, each call with its arguments."""
    content = content_text(message.get("content"))
    role = message.get("role")
    if role == "tool":
        label = tool_name or message.get("name") or "tool"
        return f"[tool result of {label}, call {message.get('tool_call_id')}]\n{content}"
    lines = [content] if content else []
    lines += [f"[tool call {c.id}] {c.name}({c.arguments})" for c in tool_calls(message)]
    return "\n".join(lines)


# --- what a fit returns, and the units it works on -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evicted:
    """An input message rewritten or dropped by `stage`; `index` is its place in the input.

    `tool_name` is the function a tool result answers (tool messages rarely carry a name).
    """

    index: int
    message: Message
    stage: str
    tool_name: str | None = None

    @property
    def text(self) -> str:
        return evicted_text(self.message, self.tool_name)


@dataclass(frozen=True, slots=True)
class Fitted:
    messages: list[Message]
    stages: list[str]
    window: int
    budget: int
    tokens: int
    over_budget: bool
    summary: str | None
    evicted: list[Evicted]
