"""Whether an old tool step is still needed, and which tool result reports a failure. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..compaction import Summarizer
from ..summarizers import extractive_summarize
from .transcript import StepView, content_text, tool_calls

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
    """The transcript's last message when it is a tool result reporting an error (docs/decisions.md: the cue for
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
