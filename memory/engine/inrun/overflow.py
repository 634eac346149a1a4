"""What a provider's context-length error says: the model's limit and the size that overflowed.

The message is the agent's to send, so reading it is bounded: only its first SCAN_CHARS characters
are read, and every pattern runs in time linear in what it reads (docs/reliability.md, "Parsers of
agent text").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --- context-length errors --------------------------------------------------------------------------

# A learned limit outside this range is a parse accident, not a model.
MIN_LIMIT = 1024
MAX_LIMIT = 100_000_000
# Every vendor states its numbers in the first sentence of the error; the rest is not read.
SCAN_CHARS = 10_000

# A number: at most 12 digits, plain ("8192") or in groups of three ("8,192", "1_048_576",
# "200 000"); never a piece of a longer run of digits or groups, which is no window (and is never
# converted: Python refuses to convert more than 4,300 digits). The lookarounds tie a number to the
# start and end of its run, so a long run is tried once, not from each of its positions (which takes
# time quadratic in the run's length), and the bounded repetitions keep each try short.
_N = r"(?<![0-9])(?<![0-9][,_])([0-9]{1,3}(?:[,_ ][0-9]{3}){1,3}|[0-9]{1,12})(?![0-9])(?![,_][0-9])"
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
    # At most 12 digits (_N), so the conversion is cheap and cannot fail.
    return int(text.replace(",", "").replace("_", "").replace(" ", ""))


@dataclass(frozen=True, slots=True)
class Overflow:
    """What a context-length error says: the model's limit, and the size that overflowed it."""

    limit: int | None = None
    used: int | None = None


def parse_overflow(message: str) -> Overflow:
    """Read the limit (and, when stated, the prompt's size) out of a provider's overflow message.

    Reads the first SCAN_CHARS characters, in time linear in them; never raises.
    """
    text = (message or "")[:SCAN_CHARS]
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
