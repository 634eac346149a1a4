"""A summariser's reply read back: its bullets, and the numbers of the items each one cites.

The reply is free text from a language model (or the offline summariser), answering the prompt of
`prompt.build_prompt`: one bullet a line, each ending with `[sources: N, M]`. A line that cannot
be read as a bullet citing at least one existing item is counted and dropped; the items no bullet
cites are the caller's to keep (compaction carries each as a bullet of its own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParsedBullet:
    text: str
    sources: tuple[int, ...]


_CITATION = re.compile(r"[\[(]\s*sources?\s*:\s*([0-9][0-9,\s\-–]*)[\])]", re.IGNORECASE)
_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def _numbers(spec: str, limit: int) -> list[int]:
    found: list[int] = []
    for part in re.split(r"[,\s]+", spec.strip()):
        if not part:
            continue
        bounds = re.split(r"[-–]", part)
        try:
            if len(bounds) == 2 and bounds[0] and bounds[1]:
                low, high = int(bounds[0]), int(bounds[1])
                # A range wider than the item list is a hallucination, not a citation.
                span = range(low, high + 1) if 0 < high - low <= limit else range(0)
            else:
                span = range(int(bounds[0]), int(bounds[0]) + 1)
        except ValueError:
            continue
        found.extend(n for n in span if 1 <= n <= limit)
    return found


def parse_reply(reply: str, item_count: int) -> tuple[list[ParsedBullet], int]:
    """Bullets with valid citations, and how many non-empty lines had none (and were dropped)."""
    parsed: list[ParsedBullet] = []
    unparsed = 0
    for line in (reply or "").splitlines():
        if not line.strip():
            continue
        citations = _CITATION.findall(line)
        sources: list[int] = []
        for spec in citations:
            sources.extend(n for n in _numbers(spec, item_count) if n not in sources)
        text = _MARKER.sub("", _CITATION.sub("", line)).strip(" \t-–:;")
        if not sources or not text:
            unparsed += 1
            continue
        parsed.append(ParsedBullet(text=text, sources=tuple(sources)))
    return parsed, unparsed
