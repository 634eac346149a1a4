"""Whether an old tool step is still needed, and which tool result reports a failure. No I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..prompt import Summarizer
from ..summarizers import extractive_summarize
from .transcript import StepView, ToolCallView, content_text, tool_calls

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
# How much of agent text the judge reads: a call's arguments (for paths and distinctive words; a
# path is named near the start of a call, a longer argument is content being written), the
# request, and each result (for distinctive words). Everything it reads, it reads in linear time.
ARGUMENT_SCAN_CHARS = 16_000
REQUEST_SCAN_CHARS = 16_000
RESULT_SCAN_CHARS = 4_000
# A path ("src/app.py", "~/x", "./a/b") or a file name ("app.py"). Each alternative starts only where
# a run of its characters starts (the lookbehinds): tried from every position inside a long run, it
# would rescan the rest of the run each time, in time quadratic in the run's length.
_PATH = re.compile(r"(?<![\w~.-])[\w~.-]*(?:/[\w.-]+)+|(?<![\w-])[\w-]+\.[A-Za-z0-9]{1,6}\b")
# A distinctive word: 8 characters or more. Linear as it is: a try either matches the rest of its
# run (and the search goes on after it) or fails within 8 characters.
_DISTINCT = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{7,}")
# The path tails a mentioned word also stands for ("settings.yaml" in "config/settings.yaml").
_TAILS = 4


def _canonical_arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        # Not JSON (or nested past the parser's depth): compared as text, blanks folded.
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
    return set(_PATH.findall(arguments[:ARGUMENT_SCAN_CHARS]))


def _name_has(name: str, words: Sequence[str]) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in words)


@dataclass(frozen=True, slots=True)
class _CallFacts:
    """What the judge reads of one call, read once: its key for "the same call again", the paths
    it reads or writes, and whether all its arguments were scanned for them."""

    name: str
    key: tuple[str, str]
    reads: frozenset[str]
    writes: frozenset[str]
    scanned: bool

    @classmethod
    def of(cls, call: ToolCallView) -> _CallFacts:
        reading, writing = _name_has(call.name, _READ_WORDS), _name_has(call.name, _WRITE_WORDS)
        paths = frozenset(_paths(call.arguments)) if reading or writing else frozenset()
        return cls(
            name=call.name,
            key=(call.name, _canonical_arguments(call.arguments)),
            reads=paths if reading else frozenset(),
            writes=paths if writing else frozenset(),
            scanned=len(call.arguments) <= ARGUMENT_SCAN_CHARS,
        )


def _mentioned_words(text: str) -> set[str]:
    """The distinctive words of `text`, each also as its last few path tails."""
    words: set[str] = set()
    for word in _DISTINCT.findall(text):
        words.add(word)
        tail = word
        for _ in range(_TAILS):
            cut = tail.find("/")
            if cut < 0:
                break
            tail = tail[cut + 1 :]
            words.add(tail)
    return words


class _Later:
    """What the steps after one did and said, gathered step by step from the newest back."""

    def __init__(self, request: str) -> None:
        self.calls: set[tuple[str, str]] = set()
        self.names: set[str] = set()
        self.written: set[str] = set()
        self.mentioned = _mentioned_words(request[:REQUEST_SCAN_CHARS])

    def add(self, facts: Sequence[_CallFacts], step: StepView) -> None:
        for fact in facts:
            self.calls.add(fact.key)
            self.names.add(fact.name)
            self.written |= fact.writes
        for call in step.calls:
            self.mentioned |= _mentioned_words(call.arguments[:ARGUMENT_SCAN_CHARS])


def _verdict(step: StepView, facts: Sequence[_CallFacts], later: _Later) -> Verdict:
    if facts and all(f.key in later.calls for f in facts):
        return Verdict(False, 0.9, "the same call was made again later")
    if (
        step.results
        and all(_looks_failed(r) for r in step.results)
        and any(f.name in later.names for f in facts)
    ):
        return Verdict(False, 0.8, "it failed and the tool was called again later")
    read_paths = {p for f in facts for p in f.reads}
    # A read whose arguments were not all scanned may name a path nobody rewrote.
    if read_paths and all(f.scanned for f in facts if f.reads) and read_paths <= later.written:
        return Verdict(False, 0.75, "it read files a later step rewrote")
    words = {w for r in step.results for w in _DISTINCT.findall(r[:RESULT_SCAN_CHARS])}
    if not words.isdisjoint(later.mentioned):
        return Verdict(True, 0.7, "its output is referred to later")
    return Verdict(True, 0.55, "no sign it was superseded")


def heuristic_still_needed(step: StepView, later: Sequence[StepView], request: str) -> Verdict:
    """The offline "still needed?" judge: deterministic signals, each with a fixed confidence.

    Not needed when every call was repeated later with the same arguments (0.9), when every result
    failed and the tool was called again (0.8), or when the step read files a later step rewrote
    (0.75). Needed when the request or a later call names a distinctive word of its output (0.7).
    Otherwise needed at 0.55: age alone never drops a step. Paths and words are read from the first
    ARGUMENT_SCAN_CHARS of each call's arguments (and of the request) and the first
    RESULT_SCAN_CHARS of each result; a read call with longer arguments is never "rewritten later".
    """
    seen = _Later(request)
    for other in later:
        seen.add([_CallFacts.of(c) for c in other.calls], other)
    return _verdict(step, [_CallFacts.of(c) for c in step.calls], seen)


def heuristic_verdicts(steps: Sequence[StepView], request: str) -> list[Verdict]:
    """`heuristic_still_needed` for every step, each against the steps after it, in one pass from
    the newest back: time linear in the transcript, where judging each step apart is quadratic."""
    seen = _Later(request)
    verdicts: list[Verdict] = []
    for step in reversed(steps):
        facts = [_CallFacts.of(c) for c in step.calls]
        verdicts.append(_verdict(step, facts, seen))
        seen.add(facts, step)
    verdicts.reverse()
    return verdicts


@dataclass(frozen=True, slots=True)
class Judges:
    """The model-shaped helpers: the configured summariser, and the "still needed?" judge."""

    summarize: Summarizer = extractive_summarize
    still_needed: NeedJudge = heuristic_still_needed
