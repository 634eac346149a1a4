"""In-run compaction: keep one long agent run inside its model's context window.

Why each stage exists: docs/decisions.md, "In-run compaction".

An agent sends its whole transcript (OpenAI chat-completions messages) before every model call and
gets back a transcript that fits. Stages, applied in this order and only as far as needed:

- RawToolFallback — the model changed mid-run: every tool step becomes plain text the new model reads.
- CheckThreshold — the budget is 80 % of the model's window, checked against the previous send's
  input tokens (or a count of the messages). Over it, the next two stages bring the transcript down
  to REFILL_FRACTION of the budget, so the rewrite is chunky and a vendor's prefix cache survives
  several calls between rewrites (docs/decisions.md: "the cut is chunky on purpose").
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

The package: `transcript` (messages, token counts, checks, the words written into a transcript),
`judge` (is an old tool step still needed? which result reports a failure?), `overflow` (a
provider's context-length error), `windows` (model windows and learned limits; fetching a newer
table is memory/windows.py's, as the engine does no I/O), `units` (messages grouped into the units
a fit keeps or drops whole), `state` (one fit's working state: the seed, the note and the units, their
size, what was evicted) and `stages` (the stages over that state, and `fit`).
"""

from __future__ import annotations

from .. import tokens as tok
from .judge import FailedToolResult, Judges, NeedJudge, Verdict, failed_tool_result, heuristic_still_needed
from .overflow import MAX_LIMIT, MIN_LIMIT, Overflow, parse_overflow
from .stages import fit
from .transcript import (
    CALLS_AS_TEXT,
    CHECK_THRESHOLD,
    DIGEST_HEADER,
    DROP_CONFIDENCE,
    EXTRACT,
    MARK,
    NOTE_HEADER,
    NOTICE,
    RAW_TOOL_FALLBACK,
    REFILL_FRACTION,
    RESULTS_AS_TEXT,
    STEP_STORED,
    STEP_UNSTORED,
    SUMMARY_MIN_TOKENS,
    SUMMARY_SHARE,
    THRESHOLD_FRACTION,
    TOOL_HISTORY,
    TRIM_FALLBACK,
    TRIM_RATIO,
    TRIM_RATIO_STAGE,
    Evicted,
    Fitted,
    Message,
    StepView,
    ToolCallView,
    TranscriptError,
    check_transcript,
    content_text,
    evicted_text,
    is_ottoweb_text,
    is_write_todo,
    message_tokens,
    tool_calls,
    transcript_tokens,
)
from .windows import (
    DEFAULT_WINDOW,
    BundledTable,
    LearnedStore,
    MemoryLearnedStore,
    Source,
    WindowInfo,
    WindowRegistry,
    load_bundled,
    normalize_model,
    parse_table,
    table_from_body,
)

__all__ = [
    "BundledTable",
    "CALLS_AS_TEXT",
    "CHECK_THRESHOLD",
    "DEFAULT_WINDOW",
    "DIGEST_HEADER",
    "DROP_CONFIDENCE",
    "EXTRACT",
    "Evicted",
    "FailedToolResult",
    "Fitted",
    "Judges",
    "LearnedStore",
    "MARK",
    "MAX_LIMIT",
    "MIN_LIMIT",
    "MemoryLearnedStore",
    "Message",
    "NOTE_HEADER",
    "NOTICE",
    "NeedJudge",
    "Overflow",
    "RAW_TOOL_FALLBACK",
    "REFILL_FRACTION",
    "RESULTS_AS_TEXT",
    "STEP_STORED",
    "STEP_UNSTORED",
    "SUMMARY_MIN_TOKENS",
    "SUMMARY_SHARE",
    "Source",
    "StepView",
    "THRESHOLD_FRACTION",
    "TOOL_HISTORY",
    "TRIM_FALLBACK",
    "TRIM_RATIO",
    "TRIM_RATIO_STAGE",
    "ToolCallView",
    "TranscriptError",
    "Verdict",
    "WindowInfo",
    "WindowRegistry",
    "check_transcript",
    "content_text",
    "evicted_text",
    "failed_tool_result",
    "fit",
    "heuristic_still_needed",
    "is_ottoweb_text",
    "is_write_todo",
    "load_bundled",
    "message_tokens",
    "normalize_model",
    "parse_overflow",
    "parse_table",
    "table_from_body",
    "tok",
    "tool_calls",
    "transcript_tokens",
]
