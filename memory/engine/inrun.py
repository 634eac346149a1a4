"""In-run compaction: keep one long agent run inside its model's context window (seeds 002 and 000).

An agent sends its whole transcript (OpenAI chat-completions messages) before every model call and
gets back a transcript that fits. Stages, applied in this order and only as far as needed:

- RawToolFallback — the model changed mid-run: every tool step becomes plain text the new model reads.
- CheckThreshold — the budget is 80 % of the model's window, checked against the previous send's
  input tokens (or a count of the messages). Over it, the next two stages bring the transcript down
  to REFILL_FRACTION of the budget, so the rewrite is chunky and a vendor's prefix cache survives
  several calls between rewrites (seed 000: "the cut is chunky on purpose").
- ExtractContextHistories — fold older conversation turns into the rolling summary.
- ToolHistory — summarise the oldest tool-call exchanges into one text line per call.
- TrimRatio → TrimFallback — after a provider's context-length error (its limit is learned by the
  caller first): cut to 80 % of the size that overflowed; first drop tool steps the judge says are no
  longer needed with confidence ≥ 0.7 (never the latest step, never a write_todo call), then the oldest
  exchange — two conversation messages at a time, then the oldest tool step with its results.

Invariants, after every stage: the seed (leading system messages and the first user message) and the
latest step are kept; no tool result is without its call and no call without its result. Every input
message rewritten or dropped is reported in `Fitted.evicted`, whole, so the caller can store it
before the rewrite is used; a stub says where the original is only when it really is stored.

This module also holds the model-window table and its registry (bundled JSON, optional URL refresh in
a background thread, limits learned from overflow errors) and the parser for those errors.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from . import tokens as tok
from .compaction import SourceItem, Summarizer, parse_reply
from .summarizers import extractive_summarize

log = logging.getLogger(__name__)

Message = dict[str, Any]

# Seed 002: the token budget is 80 % of the context window.
THRESHOLD_FRACTION = 0.8
# Once over the budget, compact down to this share of it (hysteresis; see the module docstring).
REFILL_FRACTION = 0.75
# Seed 002: after a context-length error, history is cut to 80 % of its size.
TRIM_RATIO = 0.8
# Seed 002: a tool step is dropped by judgement only at this confidence or more.
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
# The stubs say the original is searchable only when a session really stored it (seed 000).
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


# --- judging ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a tool step is still needed, how sure the judge is (0–1), and why."""

    needed: bool
    confidence: float
    reason: str


NeedJudge = Callable[[StepView, Sequence[StepView], str], Verdict]

_ERROR_WORDS = (
    "error",
    "exception",
    "traceback",
    "failed",
    "not found",
    "no such file",
    "permission denied",
    "timed out",
)
_READ_WORDS = ("read", "get", "list", "cat", "view", "open", "search", "grep", "find", "fetch", "ls", "show")
_WRITE_WORDS = ("write", "edit", "patch", "replace", "create", "delete", "update", "apply", "move", "remove")
_PATH = re.compile(r"[\w~.-]*(?:/[\w.-]+)+|[\w-]+\.[A-Za-z0-9]{1,6}\b")
_DISTINCT = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{7,}")


def _canonical_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return " ".join(arguments.split())


def _looks_failed(result: str) -> bool:
    head = result[:300].lower()
    return any(word in head for word in _ERROR_WORDS)


@dataclass(frozen=True, slots=True)
class FailedToolResult:
    """The transcript's last message when it is a tool result reporting an error (seed 002's cue for
    attaching recorded fixes): the tool's name and the result's text."""

    tool: str
    error: str


def failed_tool_result(messages: Sequence[Mapping[str, Any]]) -> FailedToolResult | None:
    """The last message as a failed tool result, or None when it is not a tool result or it succeeded.

    A result has failed when it says so (`is_error: true`, as some vendors mark it) or its start
    names an error the way `heuristic_still_needed` reads one. The tool's name comes from the call
    it answers; a result whose call is not in the transcript names no tool and is None.
    """
    if not messages or messages[-1].get("role") != "tool":
        return None
    last = messages[-1]
    text = content_text(last.get("content"))
    if not text.strip() or not (last.get("is_error") is True or _looks_failed(text)):
        return None
    call_id = last.get("tool_call_id")
    for message in reversed(messages[:-1]):
        for call in tool_calls(message):
            if call.id == call_id and call.name:
                return FailedToolResult(tool=call.name, error=text)
    return None


def _paths(arguments: str) -> set[str]:
    return set(_PATH.findall(arguments))


def _name_has(name: str, words: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in words)


def heuristic_still_needed(step: StepView, later: Sequence[StepView], request: str) -> Verdict:
    """The offline "still needed?" judge: deterministic signals, each with a fixed confidence.

    Not needed when every call was repeated later with the same arguments (0.9), when every result
    failed and the tool was called again (0.8), or when the step read files a later step rewrote
    (0.75). Needed when the request or a later call names something distinctive from its output
    (0.7). Otherwise needed at 0.55: age alone never drops a step.
    """
    later_calls = [call for other in later for call in other.calls]
    repeated = {(c.name, _canonical_arguments(c.arguments)) for c in later_calls}
    if step.calls and all((c.name, _canonical_arguments(c.arguments)) in repeated for c in step.calls):
        return Verdict(False, 0.9, "the same call was made again later")
    later_names = {c.name for c in later_calls}
    if (
        step.results
        and all(_looks_failed(r) for r in step.results)
        and any(c.name in later_names for c in step.calls)
    ):
        return Verdict(False, 0.8, "it failed and the tool was called again later")
    read_paths = {p for c in step.calls if _name_has(c.name, _READ_WORDS) for p in _paths(c.arguments)}
    written = {p for c in later_calls if _name_has(c.name, _WRITE_WORDS) for p in _paths(c.arguments)}
    if read_paths and read_paths <= written:
        return Verdict(False, 0.75, "it read files a later step rewrote")
    mentioned = request + "\n" + "\n".join(c.arguments for c in later_calls)
    words = {w for r in step.results for w in _DISTINCT.findall(r[:4000])}
    if any(w in mentioned for w in words):
        return Verdict(True, 0.7, "its output is referred to later")
    return Verdict(True, 0.55, "no sign it was superseded")


@dataclass(frozen=True, slots=True)
class Judges:
    """The model-shaped helpers: the configured summariser, and the "still needed?" judge."""

    summarize: Summarizer = extractive_summarize
    still_needed: NeedJudge = heuristic_still_needed


# --- context-length errors --------------------------------------------------------------------------

# A learned limit outside this range is a parse accident, not a model.
MIN_LIMIT = 1024
MAX_LIMIT = 100_000_000

_N = r"(\d{1,3}(?:[,_ ]\d{3})+|\d+)"
# (pattern, group holding the limit, group holding the size that overflowed or 0), first match wins.
_OVERFLOW_PATTERNS: tuple[tuple[re.Pattern[str], int, int], ...] = tuple(
    (re.compile(p, re.IGNORECASE), limit, used)
    for p, limit, used in (
        # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
        (rf"{_N}\s*tokens?\s*>\s*{_N}\s*(?:tokens?\s*)?maximum", 2, 1),
        # Anthropic: "input length and `max_tokens` exceed context limit: 199000 + 4096 > 200000"
        (rf"context limit:?\s*{_N}\s*\+\s*{_N}\s*>\s*{_N}", 3, 1),
        # Gemini: "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576)"
        (rf"token count\s*\(?{_N}\)?\s*exceeds the maximum number of tokens allowed\s*\(?{_N}", 2, 1),
        # OpenAI: "This model's maximum context length is 8192 tokens"
        (rf"maximum context length (?:is|of)\s*{_N}", 1, 0),
        # "context window of 8,192 tokens", "context length limit is 8192", "context size: 8192"
        (rf"context (?:window|length|size)(?: limit)?(?: is| of|:)?\s*{_N}", 1, 0),
        # "exceeds the maximum of 8192 tokens", "maximum input tokens: 8192", "limit of 8192 tokens"
        (
            rf"(?:maximum|limit)(?: input| prompt| number of)?(?: tokens?)?(?: allowed)?(?: is| of|:)?\s*{_N}\s*tokens",
            1,
            0,
        ),
    )
)
_USED_PATTERNS = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"{_N}\s*(?:tokens\s*)?in the messages",
        rf"(?:messages|prompt|input) resulted in\s*{_N}",
        rf"prompt (?:is too long|contains|has):?\s*{_N}",
        rf"(?:you requested|requested)\s*{_N}",
    )
)


def _number(text: str) -> int:
    return int(re.sub(r"[,_ ]", "", text))


@dataclass(frozen=True, slots=True)
class Overflow:
    """What a context-length error says: the model's limit, and the size that overflowed it."""

    limit: int | None = None
    used: int | None = None


def parse_overflow(message: str) -> Overflow:
    """Read the limit (and, when stated, the prompt's size) out of a provider's overflow message."""
    text = message or ""
    limit: int | None = None
    used: int | None = None
    for pattern, limit_group, used_group in _OVERFLOW_PATTERNS:
        found = pattern.search(text)
        if found is None:
            continue
        limit = _number(found.group(limit_group))
        if used_group:
            used = _number(found.group(used_group))
        break
    if used is None:
        for pattern in _USED_PATTERNS:
            found_used = pattern.search(text)
            if found_used is not None:
                used = _number(found_used.group(1))
                break
    if limit is not None and not MIN_LIMIT <= limit <= MAX_LIMIT:
        limit = None
    if used is not None and used <= 0:
        used = None
    return Overflow(limit=limit, used=used)


# --- model windows ----------------------------------------------------------------------------------

DEFAULT_WINDOW = 128_000
REFRESH_SECONDS = 3600
RETRY_SECONDS = 300
FETCH_TIMEOUT = 10.0
MAX_TABLE_BYTES = 5_000_000
BUNDLED_PATH = Path(__file__).with_name("model_windows.json")

Source = Literal["table", "learned", "default"]
_MODEL = re.compile(r"^[a-z0-9][a-z0-9._-]*:\S+$")


def normalize_model(model: str) -> str:
    """`vendor:model`, lower-cased; ValueError when there is no vendor part."""
    key = (model or "").strip().lower()
    if len(key) > 200 or not _MODEL.match(key):
        raise ValueError(
            f"model must be 'vendor:model' (for example 'openai:gpt-4o'), at most 200 characters; got {model!r}"
        )
    return key


def _window_value(entry: object) -> int | None:
    if isinstance(entry, bool):
        return None
    if isinstance(entry, int):
        return entry if MIN_LIMIT <= entry <= MAX_LIMIT else None
    if isinstance(entry, dict):
        for key in (
            "context_window",
            "window",
            "max_input_tokens",
            "input_tokens",
            "context_length",
            "max_context_window_tokens",
        ):
            if key in entry:
                return _window_value(entry[key])
    return None


def parse_table(document: object) -> dict[str, int]:
    """Windows from a table document, in any of the shapes a table service might publish.

    `{"vendor:model": 128000}`, `{"vendor": {"model": 128000}}`, `{"models": …}` (or items/data), or a
    list of `{"vendor"|"provider", "model"|"name"|"id", "context_window"|"window"|…}`. Entries that
    cannot be read are skipped.
    """
    table: dict[str, int] = {}
    if isinstance(document, dict):
        for wrapper in ("models", "items", "data"):
            if isinstance(document.get(wrapper), dict | list):
                return parse_table(document[wrapper])
        for key, entry in document.items():
            if not isinstance(key, str):
                continue
            if ":" in key:
                value = _window_value(entry)
                if value is not None:
                    _put(table, key, value)
            elif isinstance(entry, dict) and _window_value(entry) is None:
                for model, inner in entry.items():
                    value = _window_value(inner)
                    if isinstance(model, str) and value is not None:
                        _put(table, f"{key}:{model}", value)
    elif isinstance(document, list):
        for entry in document:
            if not isinstance(entry, dict):
                continue
            vendor = entry.get("vendor") or entry.get("provider")
            model = entry.get("model") or entry.get("name") or entry.get("id")
            value = _window_value(entry)
            if not isinstance(model, str) or value is None:
                continue
            key = model if ":" in model or not isinstance(vendor, str) else f"{vendor}:{model}"
            _put(table, key, value)
    return table


def _put(table: dict[str, int], key: str, value: int) -> None:
    try:
        table[normalize_model(key)] = value
    except ValueError:
        pass


@dataclass(frozen=True, slots=True)
class BundledTable:
    models: Mapping[str, int]
    fixed: Mapping[str, int]


def load_bundled(path: Path = BUNDLED_PATH) -> BundledTable:
    document = json.loads(path.read_text(encoding="utf-8"))
    return BundledTable(models=parse_table(document["models"]), fixed=parse_table(document["fixed"]))


def fetch_table(url: str, *, timeout: float = FETCH_TIMEOUT) -> dict[str, int]:
    """GET a window table over http(s); ValueError when it holds no usable entry."""
    if not url.lower().startswith(("http://", "https://")):
        raise ValueError(f"OTTO_MODEL_WINDOWS_URL must be http(s): {url!r}")
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "ottoweb"})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (scheme checked above)
        body = response.read(MAX_TABLE_BYTES + 1)
    if len(body) > MAX_TABLE_BYTES:
        raise ValueError("the window table is larger than 5 MB")
    table = parse_table(json.loads(body))
    if not table:
        raise ValueError("the window table has no usable entry")
    return table


class LearnedStore(Protocol):
    """Where limits learned from overflow errors persist (the ORM in production)."""

    def get(self, model: str) -> int | None: ...

    def put(self, model: str, window: int) -> None: ...

    def all(self) -> dict[str, int]: ...


class MemoryLearnedStore:
    """A LearnedStore in a dict, for tests and benchmarks."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}

    def get(self, model: str) -> int | None:
        return self.rows.get(model)

    def put(self, model: str, window: int) -> None:
        self.rows[model] = window

    def all(self) -> dict[str, int]:
        return dict(self.rows)


@dataclass(frozen=True, slots=True)
class WindowInfo:
    model: str
    window: int
    source: Source


class WindowRegistry:
    """Each model's context window: fixed entries, then the fetched or bundled table, then 128K.

    A learned limit replaces the table's value when it is smaller and stands in for a model the table
    lacks. With a URL, the table is refreshed at most every REFRESH_SECONDS in a background thread; a
    lookup never waits for it (the bundled table answers meanwhile), and a failed fetch is retried
    after RETRY_SECONDS. Time is `time.time()`, so tests move it with time-machine.
    """

    def __init__(
        self,
        *,
        url: str = "",
        learned: LearnedStore | None = None,
        bundled: BundledTable | None = None,
        timeout: float = FETCH_TIMEOUT,
    ) -> None:
        self.url = url
        self.learned: LearnedStore = learned if learned is not None else MemoryLearnedStore()
        self.bundled = bundled if bundled is not None else load_bundled()
        self.timeout = timeout
        self.fetched: dict[str, int] | None = None
        self.fetched_at: float | None = None
        self.last_error: str | None = None
        self.fetches = 0
        self._due = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # Refreshing ----------------------------------------------------------------------------------

    def warm(self) -> threading.Thread | None:
        """Start a background refresh when one is due; return its thread. Never blocks."""
        if not self.url:
            return None
        with self._lock:
            if (self._thread is not None and self._thread.is_alive()) or time.time() < self._due:
                return None
            thread = threading.Thread(target=self._refresh, name="ottoweb-model-windows", daemon=True)
            self._thread = thread
        thread.start()
        return thread

    def _refresh(self) -> None:
        try:
            table = fetch_table(self.url, timeout=self.timeout)
        except Exception as exc:  # a table outage must never reach a request; log and retry later
            log.warning("model window table %s: %s; retrying in %ss", self.url, exc, RETRY_SECONDS)
            with self._lock:
                self.fetches += 1
                self.last_error = str(exc) or exc.__class__.__name__
                self._due = time.time() + RETRY_SECONDS
            return
        with self._lock:
            self.fetches += 1
            self.fetched = table
            self.fetched_at = time.time()
            self.last_error = None
            self._due = self.fetched_at + REFRESH_SECONDS

    def wait(self, timeout: float = 30.0) -> None:
        """Wait for a refresh in flight (tests and the warm-up command; requests never call this)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    # Looking up ----------------------------------------------------------------------------------

    def _table(self) -> Mapping[str, int]:
        return self.fetched if self.fetched is not None else self.bundled.models

    def table_window(self, model: str) -> int | None:
        """The table's window for `model`: fixed, exact, or the longest entry it extends with '-'."""
        if model in self.bundled.fixed:
            return self.bundled.fixed[model]
        table = self._table()
        if model in table:
            return table[model]
        # Dated or suffixed ids ("anthropic:claude-sonnet-4-20250514") take their family's entry.
        best = ""
        for key in table:
            if model.startswith(key + "-") and len(key) > len(best):
                best = key
        return table[best] if best else None

    def lookup(self, model: str, *, learned: LearnedStore | None = None) -> WindowInfo:
        """The window to use for `model` (already normalised) and where it came from.

        `learned`: the limits of the caller (one user's); the registry's own store otherwise.
        """
        self.warm()
        return self._resolve(model, (learned or self.learned).get(model))

    def _resolve(self, model: str, learned: int | None) -> WindowInfo:
        table = self.table_window(model)
        if learned is not None and (table is None or learned < table):
            return WindowInfo(model, learned, "learned")
        if table is not None:
            return WindowInfo(model, table, "table")
        return WindowInfo(model, DEFAULT_WINDOW, "default")

    def learn(self, model: str, limit: int, *, learned: LearnedStore | None = None) -> bool:
        """Record a limit from an overflow error when it is smaller than what is in use; say if it was.

        `learned`: where to record it (one user's limits); the registry's own store otherwise.
        """
        if not MIN_LIMIT <= limit <= MAX_LIMIT:
            return False
        store = learned or self.learned
        table = self.table_window(model)
        known = store.get(model)
        if table is not None and limit >= table:
            return False
        if known is not None and limit >= known:
            return False
        store.put(model, limit)
        return True

    def listing(self, *, learned: LearnedStore | None = None) -> list[WindowInfo]:
        """Every model the registry knows, with the window in use and its source, by name."""
        self.warm()
        learned_limits = (learned or self.learned).all()
        names = set(self._table()) | set(self.bundled.fixed) | set(learned_limits)
        return [self._resolve(name, learned_limits.get(name)) for name in sorted(names)]


# --- the stages -------------------------------------------------------------------------------------


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


@dataclass(slots=True)
class _Msg:
    data: Message
    tokens: int
    # Index in the caller's transcript; None for text this call wrote.
    origin: int | None


UnitKind = Literal["seed", "turn", "tool"]


@dataclass(slots=True)
class _Unit:
    kind: UnitKind
    msgs: list[_Msg]
    latest: bool = False
    request: bool = False

    @property
    def tokens(self) -> int:
        return sum(m.tokens for m in self.msgs)

    def calls(self) -> list[ToolCallView]:
        return [c for m in self.msgs for c in tool_calls(m.data)]

    def has_write_todo(self) -> bool:
        return any(is_write_todo(c.name) for c in self.calls())


# What a note costs besides its summary lines: framing, header and the longest notice.
_NOTE_FRAME_TOKENS = message_tokens(
    {"role": "system", "content": NOTE_HEADER + "\n" + max(NOTICE.values(), key=len)}
)


def _wrap(data: Message, origin: int | None) -> _Msg:
    return _Msg(data=data, tokens=message_tokens(data), origin=origin)


def _text_message(role: str, text: str) -> _Msg:
    return _wrap({"role": role, "content": text}, None)


def _excerpt(text: str, max_tokens: int) -> str:
    flat = " ".join(text.split())
    cut = tok.truncate_to_tokens(flat, max_tokens)
    return cut if cut == flat else cut.rstrip() + " …"


def _body_lines(text: str) -> list[str]:
    """What of our own text carries meaning when it is folded again: its "- " lines."""
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]


class _Fit:
    """One call's working state: the seed, the note (rolling summary), and the units after them."""

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        window: int,
        judges: Judges,
        stored: bool,
        on_stage: Callable[[str, list[Message]], None] | None,
    ) -> None:
        self.window = window
        self.budget = int(window * THRESHOLD_FRACTION)
        self.judges = judges
        self.stored = stored
        self.on_stage = on_stage
        self.evicted: list[Evicted] = []
        self._evicted_origins: set[int] = set()
        self.factor = 1.0
        self.summary: list[str] = []
        self.notice: str | None = None
        self.note_changed = False
        self.note_input: _Msg | None = None
        self._note_cache: _Msg | None = None
        self.seed: list[_Msg] = []
        self.units: list[_Unit] = []
        self._parse(messages)

    # Parsing and assembling ------------------------------------------------------------------------

    def _parse(self, messages: Sequence[Message]) -> None:
        wrapped = [_wrap(m, i) for i, m in enumerate(messages)]
        i = 0
        while i < len(wrapped) and wrapped[i].data["role"] == "system":
            i += 1
        if i < len(wrapped) and wrapped[i].data["role"] == "user":
            i += 1
        self.seed = wrapped[:i]
        if i < len(wrapped) and wrapped[i].data["role"] == "system":
            content = wrapped[i].data.get("content")
            if isinstance(content, str) and content.startswith(NOTE_HEADER):
                self.note_input = wrapped[i]
                self._read_note(content)
                i += 1
        while i < len(wrapped):
            msg = wrapped[i]
            if msg.data["role"] == "assistant" and tool_calls(msg.data):
                group = [msg]
                i += 1
                while i < len(wrapped) and wrapped[i].data["role"] == "tool":
                    group.append(wrapped[i])
                    i += 1
                self.units.append(_Unit("tool", group))
            else:
                self.units.append(_Unit("turn", [msg]))
                i += 1
        if self.units:
            self.units[-1].latest = True
        for unit in reversed(self.units):
            data = unit.msgs[0].data
            if unit.kind == "turn" and data["role"] == "user" and not is_ottoweb_text(data):
                unit.request = True
                break

    def _read_note(self, content: str) -> None:
        lines = content.splitlines()[1:]
        self.summary = [line[2:] for line in lines if line.startswith("- ")]
        for state, sentence in NOTICE.items():
            if sentence in lines:
                self.notice = state

    def _note(self) -> _Msg | None:
        if not self.note_changed:
            return self.note_input
        if not self.summary and self.notice is None:
            return None
        lines = [NOTE_HEADER] + [f"- {b}" for b in self.summary]
        if self.notice is not None:
            lines.append(NOTICE[self.notice])
        text = "\n".join(lines)
        # size() asks for the note after every step of a stage; count its tokens once per version.
        if self._note_cache is None or self._note_cache.data["content"] != text:
            self._note_cache = _text_message("system", text)
        return self._note_cache

    def messages(self) -> list[Message]:
        note = self._note()
        out = [m.data for m in self.seed]
        if note is not None:
            out.append(note.data)
        out += [m.data for u in self.units for m in u.msgs]
        return out

    def counted(self, units: int | None = None) -> int:
        """Our count of the transcript; `units`, when given, is the units' total already known (a
        stage that rewrites units one by one keeps it, instead of summing thousands each step)."""
        note = self._note()
        return (
            PRIMING
            + sum(m.tokens for m in self.seed)
            + (note.tokens if note is not None else 0)
            + (sum(u.tokens for u in self.units) if units is None else units)
        )

    def size(self, units: int | None = None) -> int:
        """The transcript's size in the provider's terms (our count, calibrated by what it reported)."""
        return math.ceil(self.counted(units) * self.factor)

    def calibrate(self, reported: int | None) -> None:
        # The provider's own count of (nearly) this transcript says how far cl100k under-counts its
        # tokenizer; never assume it over-counts, so the budget is not overrun on a guess.
        counted = self.counted()
        if reported is not None and counted > 0 and reported > counted:
            self.factor = reported / counted

    def done(self, stage: str, stages: list[str]) -> None:
        stages.append(stage)
        if self.on_stage is not None:
            self.on_stage(stage, self.messages())

    # Eviction -----------------------------------------------------------------------------------

    def evict(self, unit: _Unit, stage: str) -> None:
        names = {c.id: c.name for c in unit.calls()}
        for msg in unit.msgs:
            # Our own stubs are not stored again: the originals they stand for already were (or the
            # stub says they were not).
            if msg.origin is None or msg.origin in self._evicted_origins or is_ottoweb_text(msg.data):
                continue
            self._evicted_origins.add(msg.origin)
            name = names.get(str(msg.data.get("tool_call_id"))) if msg.data["role"] == "tool" else None
            self.evicted.append(Evicted(index=msg.origin, message=msg.data, stage=stage, tool_name=name))

    def mark_removed(self) -> None:
        now = "stored" if self.stored else "unstored"
        self.notice = now if self.notice in (None, now) else "mixed"
        self.note_changed = True

    # Stages ---------------------------------------------------------------------------------------

    def raw_tool_fallback(self) -> bool:
        """Turn every tool step into an assistant message and a user message of plain text."""
        changed = False
        for index, unit in enumerate(self.units):
            if unit.kind != "tool":
                continue
            call, results = unit.msgs[0], unit.msgs[1:]
            said = content_text(call.data.get("content"))
            call_lines = [CALLS_AS_TEXT] + ([said] if said else [])
            call_lines += [f"- called {c.name} with {c.arguments} (id {c.id})" for c in tool_calls(call.data)]
            names = {c.id: c.name for c in tool_calls(call.data)}
            result_lines = [RESULTS_AS_TEXT]
            for result in results:
                call_id = str(result.data.get("tool_call_id"))
                result_lines.append(f"- {names.get(call_id, 'tool')} (id {call_id}) returned:")
                result_lines.append(content_text(result.data.get("content")))
            self.evict(unit, RAW_TOOL_FALLBACK)
            self.units[index] = _Unit(
                "turn",
                [
                    _text_message("assistant", "\n".join(call_lines)),
                    _text_message("user", "\n".join(result_lines)),
                ],
                latest=unit.latest,
            )
            changed = True
        return changed

    def _summary_cap(self) -> int:
        return max(SUMMARY_MIN_TOKENS, int(self.budget * SUMMARY_SHARE))

    def _fold_text(self, msg: _Msg) -> tuple[str, str]:
        data = msg.data
        text = content_text(data.get("content"))
        if is_ottoweb_text(data):
            body = _body_lines(text) or text.splitlines()[1:]
            return "bullet", "\n".join(body)
        return str(data["role"]), text

    def extract(self, target: int) -> bool:
        """Fold the oldest conversation turns (and earlier stubs) into the rolling summary."""
        foldable = [u for u in self.units if u.kind == "turn" and not u.latest and not u.request]
        if not foldable:
            return False
        # Fold only as many as bring the transcript to the target, allowing for the note to grow to
        # its largest: a full summary plus its framing, header and notice.
        note = self._note()
        largest = self._summary_cap() + _NOTE_FRAME_TOKENS
        need = (
            self.counted() - math.floor(target / self.factor) + max(0, largest - (note.tokens if note else 0))
        )
        chosen: list[_Unit] = []
        freed = 0
        for unit in foldable:
            chosen.append(unit)
            freed += unit.tokens
            if freed >= need:
                break
        items = [SourceItem(number=n + 1, role="bullet", text=b) for n, b in enumerate(self.summary)]
        for unit in chosen:
            for msg in unit.msgs:
                role, text = self._fold_text(msg)
                if text.strip():
                    items.append(SourceItem(number=len(items) + 1, role=role, text=text))
        self.summary = self._summarise(items, keep=list(self.summary))
        for unit in chosen:
            self.evict(unit, EXTRACT)
        chosen_ids = {id(u) for u in chosen}
        self.units = [u for u in self.units if id(u) not in chosen_ids]
        self.mark_removed()
        return True

    def _summarise(self, items: Sequence[SourceItem], *, keep: list[str]) -> list[str]:
        bullets: list[str] = []
        if items:
            try:
                parsed, _ = parse_reply(self.judges.summarize(items), len(items))
                bullets = [p.text for p in parsed]
            except Exception as exc:  # a failing summariser must not fail the run; excerpts stand in
                log.warning("in-run summary failed (%s); keeping excerpts", exc)
            if not bullets:
                bullets = keep + [_excerpt(i.text, EXCERPT_TOKENS) for i in items if i.role != "bullet"]
        cap = self._summary_cap()
        # The oldest bullets go first: what they stood for is in the context tier (when stored).
        while len(bullets) > 1 and sum(tok.count_tokens(f"- {b}") + 1 for b in bullets) > cap:
            bullets.pop(0)
        if bullets and tok.count_tokens(f"- {bullets[0]}") + 1 > cap:
            bullets[0] = _excerpt(bullets[0], cap - 4)
        return [" ".join(b.split()) for b in bullets if b.strip()]

    def _result_summary(self, text: str) -> str:
        if not text.strip():
            return "(no output)"
        try:
            parsed, _ = parse_reply(self.judges.summarize([SourceItem(1, "tool", text)]), 1)
            if parsed:
                return _excerpt(parsed[0].text, RESULT_TOKENS)
        except Exception as exc:  # as above: the excerpt is the fallback
            log.warning("tool-result summary failed (%s); keeping an excerpt", exc)
        return _excerpt(text, RESULT_TOKENS)

    def _digest(self, unit: _Unit) -> _Msg:
        call, results = unit.msgs[0], unit.msgs[1:]
        by_id = {str(r.data.get("tool_call_id")): content_text(r.data.get("content")) for r in results}
        lines = [DIGEST_HEADER]
        said = content_text(call.data.get("content"))
        if said.strip():
            lines.append(f"- said: {_excerpt(said, EXCERPT_TOKENS)}")
        for c in tool_calls(call.data):
            arguments = _excerpt(c.arguments, ARGUMENT_TOKENS)
            lines.append(f"- {c.name}({arguments}) → {self._result_summary(by_id.get(c.id, ''))}")
        lines.append(STEP_STORED if self.stored else STEP_UNSTORED)
        return _text_message("assistant", "\n".join(lines))

    def tool_history(self, target: int) -> bool:
        """Summarise the oldest tool steps, one text message each, until the target is met."""
        todo_steps = [u for u in self.units if u.kind == "tool" and u.has_write_todo()]
        # The newest todo list is the run's plan; it stays verbatim while older ones are summarised.
        newest_todo = todo_steps[-1] if todo_steps else None
        changed = False
        units = sum(u.tokens for u in self.units)
        for index, unit in enumerate(self.units):
            if self.size(units) <= target:
                break
            if unit.kind != "tool" or unit.latest or unit is newest_todo:
                continue
            self.evict(unit, TOOL_HISTORY)
            digest = _Unit("turn", [self._digest(unit)])
            units += digest.tokens - unit.tokens
            self.units[index] = digest
            changed = True
        return changed

    def _step_view(self, position: int, unit: _Unit) -> StepView:
        call, results = unit.msgs[0], unit.msgs[1:]
        by_id = {str(r.data.get("tool_call_id")): content_text(r.data.get("content")) for r in results}
        calls = tuple(tool_calls(call.data))
        return StepView(
            position=position,
            calls=calls,
            results=tuple(by_id.get(c.id, "") for c in calls),
            said=content_text(call.data.get("content")),
        )

    def _request_text(self) -> str:
        for unit in reversed(self.units):
            if unit.request:
                return content_text(unit.msgs[0].data.get("content"))
        return "\n".join(content_text(m.data.get("content")) for m in self.seed if m.data["role"] == "user")

    def trim_ratio(self, target: int) -> bool:
        """Drop, oldest first, tool steps the judge says are no longer needed (confidence ≥ 0.7)."""
        steps = [(p, u) for p, u in enumerate(self.units) if u.kind == "tool"]
        views = [self._step_view(p, u) for p, u in steps]
        request = self._request_text()
        drop: list[_Unit] = []
        for n, (_, unit) in enumerate(steps):
            if unit.latest or unit.has_write_todo():
                continue
            try:
                verdict = self.judges.still_needed(views[n], views[n + 1 :], request)
            except Exception as exc:  # a judge that fails keeps the step: dropping needs confidence
                log.warning("still-needed judge failed (%s); keeping the step", exc)
                continue
            if not verdict.needed and verdict.confidence >= DROP_CONFIDENCE:
                drop.append(unit)
        changed = False
        for unit in drop:
            if self.size() <= target:
                break
            self._drop([unit], TRIM_RATIO_STAGE)
            changed = True
        return changed

    def _drop(self, units: Sequence[_Unit], stage: str) -> None:
        ids = {id(u) for u in units}
        for unit in units:
            self.evict(unit, stage)
        self.units = [u for u in self.units if id(u) not in ids]
        self.mark_removed()

    def trim_fallback(self, target: int) -> bool:
        """Drop the oldest exchange until the target is met: two conversation messages at a time,
        then the oldest tool step with its results; the latest user request goes last of all."""
        changed = False
        while self.size() > target:
            turns = [u for u in self.units if u.kind == "turn" and not u.latest and not u.request]
            if turns:
                batch: list[_Unit] = []
                for unit in turns:
                    batch.append(unit)
                    if sum(len(u.msgs) for u in batch) >= 2:
                        break
                self._drop(batch, TRIM_FALLBACK)
            else:
                steps = [u for u in self.units if u.kind == "tool" and not u.latest]
                requests = [u for u in self.units if u.request and not u.latest]
                if steps:
                    self._drop(steps[:1], TRIM_FALLBACK)
                elif requests:
                    self._drop(requests, TRIM_FALLBACK)
                elif self.summary:
                    # Last resort: the summary's oldest lines (their originals are stored, or say not).
                    self.summary.pop(0)
                    self.note_changed = True
                else:
                    break
            changed = True
        return changed


def fit(
    messages: Sequence[Message],
    *,
    window: int,
    last_input_tokens: int | None = None,
    overflow: Overflow | None = None,
    model_switched: bool = False,
    judges: Judges | None = None,
    stored: bool = False,
    on_stage: Callable[[str, list[Message]], None] | None = None,
) -> Fitted:
    """Fit a transcript into `window` (already the learned value, if any); see the module docstring.

    `overflow` marks a context-length error on the last send (its limit learned by the caller);
    `model_switched` converts tool history to text; `stored` says a session keeps what is evicted,
    which is what the stubs then say. `on_stage` sees the transcript after every stage (tests).
    Raises TranscriptError for a transcript no provider would accept.
    """
    check_transcript(messages)
    state = _Fit(messages, window=window, judges=judges or Judges(), stored=stored, on_stage=on_stage)
    stages: list[str] = []
    reported = overflow.used if overflow is not None and overflow.used else None
    # Another model's token count says nothing about this one's tokenizer.
    if reported is None and not model_switched:
        reported = last_input_tokens
    state.calibrate(reported)
    if model_switched and any(u.kind == "tool" for u in state.units):
        state.raw_tool_fallback()
        state.done(RAW_TOOL_FALLBACK, stages)
    if overflow is not None:
        target = min(int(state.size() * TRIM_RATIO), state.budget)
        state.trim_ratio(target)
        state.done(TRIM_RATIO_STAGE, stages)
        if state.size() > target and state.trim_fallback(target):
            state.done(TRIM_FALLBACK, stages)
    else:
        state.done(CHECK_THRESHOLD, stages)
        if state.size() > state.budget:
            target = int(state.budget * REFILL_FRACTION)
            # Extract first, ToolHistory when still over; a second round folds the new stubs too.
            for _ in range(3):
                progressed = False
                if state.size() > target and state.extract(target):
                    state.done(EXTRACT, stages)
                    progressed = True
                if state.size() > target and state.tool_history(target):
                    state.done(TOOL_HISTORY, stages)
                    progressed = True
                if not progressed or state.size() <= target:
                    break
    size = state.size()
    return Fitted(
        messages=state.messages(),
        stages=stages,
        window=window,
        budget=state.budget,
        tokens=size,
        over_budget=size > state.budget,
        summary="\n".join(f"- {b}" for b in state.summary) or None,
        evicted=sorted(state.evicted, key=lambda e: e.index),
    )
