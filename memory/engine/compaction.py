"""Compaction: turn Y's raw items and prior bullets into a new generation of cited bullets.

Invariants (checked on every run, because a silent miss here is unrecoverable later):
- every raw item's hash and every prior bullet's hash_refs are cited by some new bullet, so every
  chunk stays reachable from the live generation (docs/decisions.md: uncited items were silently unreachable);
- protected items (a person's turns) are never shown to the summariser and come out verbatim;
- a summariser reply that cannot be parsed, or an exception, loses nothing: every item is carried.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import tokens as tok
from .types import Bullet, Item

log = logging.getLogger(__name__)

# Feeding prior bullets back through the summariser; measured 8/8 either way and kept it on.
REABSTRACT = True
# Words an uncited raw item keeps when it becomes its own bullet.
EXCERPT_TOKENS = 48
# No single non-protected bullet grows past this when the engine has to merge bullets itself.
MAX_MERGED_TOKENS = 120
# Words of a person's turn that leaves the live view kept in the bullet citing it: its start, where
# a request usually says what it is about; the turn itself stays verbatim in the store.
QUOTE_TOKENS = 32
# The bullets citing the person's earlier words fill at most this share of the compaction target.
QUOTE_FRACTION = 0.25


@dataclass(frozen=True, slots=True)
class SourceItem:
    """A numbered item as the summariser sees it; `role` is "bullet" for a prior bullet."""

    number: int
    role: str
    text: str


Summarizer = Callable[[Sequence[SourceItem]], str]


@dataclass(frozen=True, slots=True)
class ParsedBullet:
    text: str
    sources: tuple[int, ...]


@dataclass(slots=True)
class CompactionResult:
    bullets: list[Bullet]
    generation: int
    summarised: int = 0
    cited: int = 0
    carried: int = 0
    merged: int = 0
    unparsed_lines: int = 0
    summarizer_error: str | None = None
    notes: list[str] = field(default_factory=list)


PROMPT_HEADER = (
    "Summarise the numbered items below into a short list of bullet points for an agent's memory.\n"
    "Rules: one fact, decision or result per bullet; keep names, numbers, dates, file names and error\n"
    "codes exactly; end every bullet with [sources: N, M] naming the item numbers it draws on; every\n"
    "item must be cited by at least one bullet. Reply with the bullets only, one per line, each\n"
    "starting with '- '.\n\nItems:\n"
)


def build_prompt(items: Sequence[SourceItem]) -> str:
    """The instruction a language-model summariser receives for these items."""
    lines = [f"[{item.number}] ({item.role}) {item.text}" for item in items]
    return PROMPT_HEADER + "\n".join(lines)


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


def _excerpt(text: str, max_tokens: int) -> str:
    flat = " ".join(text.split())
    cut = tok.truncate_to_tokens(flat, max_tokens)
    return cut if cut == flat else cut.rstrip() + " …"


def is_quote(bullet: Bullet) -> bool:
    """Whether the bullet cites a person's earlier words: excerpts of protected turns that left the
    live view (not protected itself, so it can be merged; never shown to the summariser)."""
    return not bullet.protected and bullet.role == "user"


def _merge(a: Bullet, b: Bullet, generation: int) -> Bullet:
    half = MAX_MERGED_TOKENS // 2
    text = f"{_excerpt(a.text, half)} / {_excerpt(b.text, half)}"
    refs = tuple(dict.fromkeys(a.hash_refs + b.hash_refs))
    return Bullet(
        text=text,
        hash_refs=refs,
        generation=generation,
        tokens=tok.count_tokens(text),
        first_position=min(a.first_position, b.first_position),
        # Two quotes of the person merge into a quote; anything else into a plain summary line.
        role=a.role if a.role == b.role else None,
    )


def _fit(bullets: list[Bullet], target_tokens: int, generation: int) -> tuple[list[Bullet], int]:
    """Merge the oldest non-protected bullets until the generation fits `target_tokens`.

    This is the engine's own guarantee that compaction shrinks Y whatever the summariser did;
    merging keeps every hash ref, so nothing becomes unreachable.
    """
    merges = 0

    def total() -> int:
        return sum(b.tokens for b in bullets)

    while total() > target_tokens:
        free = [i for i, b in enumerate(bullets) if not b.protected]
        if len(free) < 2:
            break
        i, j = free[0], free[1]
        merged = _merge(bullets[i], bullets[j], generation)
        bullets = [b for k, b in enumerate(bullets) if k not in (i, j)] + [merged]
        bullets.sort(key=lambda b: b.first_position)
        merges += 1
    if total() > target_tokens:
        free = [i for i, b in enumerate(bullets) if not b.protected]
        if free:
            only = bullets[free[0]]
            room = max(8, target_tokens - (total() - only.tokens))
            text = _excerpt(only.text, room)
            bullets[free[0]] = Bullet(
                text=text,
                hash_refs=only.hash_refs,
                generation=generation,
                tokens=tok.count_tokens(text),
                first_position=only.first_position,
                role=only.role,
            )
    return bullets, merges


def plan_compaction(
    raw: Sequence[Item],
    prior: Sequence[Bullet],
    summarize: Summarizer,
    *,
    generation: int,
    target_tokens: int,
    protect: bool = True,
    reabstract: bool = REABSTRACT,
    protected_target: int | None = None,
) -> CompactionResult:
    """Compute generation `generation` from Y's raw items and the live bullets. Pure: writes nothing.

    With `protect`, protected items bypass the summariser and are carried verbatim; without it
    (the type-blind arm of eval_compaction) they are summarised like any other item.

    `protected_target` bounds the verbatim protected bullets (None: unbounded, the seed's policy).
    Past it, the oldest leave the view: each becomes a quote bullet (`is_quote`) holding an excerpt
    of its start and its hash, never summarised; quotes are merged only with quotes, into at most
    QUOTE_FRACTION of `target_tokens`. The turns themselves stay verbatim in the store.
    """
    result = CompactionResult(bullets=[], generation=generation)
    protected: list[Bullet] = []
    quotes: list[Bullet] = []
    passthrough: list[Bullet] = []
    # Each numbered source: (text, role, hash_refs, first_position, prior bullet or None).
    sources: list[tuple[str, str, tuple[str, ...], int, Bullet | None]] = []

    for bullet in prior:
        if bullet.protected and protect:
            protected.append(_regenerate(bullet, generation))
        elif is_quote(bullet) and protect:
            quotes.append(_regenerate(bullet, generation))
        elif reabstract:
            sources.append((bullet.text, "bullet", bullet.hash_refs, bullet.first_position, bullet))
        else:
            passthrough.append(_regenerate(bullet, generation))
    for item in raw:
        if item.protected and protect:
            protected.append(
                Bullet(
                    text=item.text,
                    hash_refs=(item.hash,),
                    generation=generation,
                    tokens=item.tokens,
                    first_position=item.position,
                    protected=True,
                    role=item.role,
                )
            )
        else:
            sources.append((item.text, item.role, (item.hash,), item.position, None))

    numbered = [SourceItem(number=i + 1, role=s[1], text=s[0]) for i, s in enumerate(sources)]
    result.summarised = len(numbered)
    reply = ""
    if numbered:
        try:
            reply = summarize(numbered)
        except Exception as exc:  # a failing summariser must cost quality, never content
            log.warning("summariser failed, carrying every item forward: %s", exc)
            result.summarizer_error = f"{type(exc).__name__}: {exc}"
    parsed, result.unparsed_lines = parse_reply(reply, len(numbered))

    cited: set[int] = set()
    summary: list[Bullet] = []
    for p in parsed:
        refs = tuple(dict.fromkeys(h for n in p.sources for h in sources[n - 1][2]))
        summary.append(
            Bullet(
                text=p.text,
                hash_refs=refs,
                generation=generation,
                tokens=tok.count_tokens(p.text),
                first_position=min(sources[n - 1][3] for n in p.sources),
            )
        )
        cited.update(p.sources)
    result.cited = len(cited)

    for number, (text, _role, refs, first, prior_bullet) in enumerate(sources, start=1):
        if number in cited:
            continue
        result.carried += 1
        if prior_bullet is not None:
            summary.append(_regenerate(prior_bullet, generation))
        else:
            excerpt = _excerpt(text, EXCERPT_TOKENS)
            summary.append(
                Bullet(
                    text=excerpt,
                    hash_refs=refs,
                    generation=generation,
                    tokens=tok.count_tokens(excerpt),
                    first_position=first,
                )
            )

    if protected_target is not None and protect:
        protected.sort(key=lambda b: b.first_position)
        kept_tokens = sum(b.tokens for b in protected)
        while protected and kept_tokens > protected_target:
            oldest = protected.pop(0)
            kept_tokens -= oldest.tokens
            quotes.append(_quote(oldest, generation))
        quotes, merged = _fit(
            sorted(quotes, key=lambda b: b.first_position), int(target_tokens * QUOTE_FRACTION), generation
        )
        result.merged += merged
    free_target = max(0, target_tokens - sum(b.tokens for b in protected) - sum(b.tokens for b in quotes))
    fitted, merged = _fit(
        sorted(summary + passthrough, key=lambda b: b.first_position), free_target, generation
    )
    result.merged += merged
    result.bullets = sorted(fitted + protected + quotes, key=lambda b: b.first_position)
    _check_reachable(raw, prior, result.bullets)
    return result


def _quote(bullet: Bullet, generation: int) -> Bullet:
    """A protected bullet leaving the view: the start of the person's words, citing the turn."""
    text = _excerpt(bullet.text, QUOTE_TOKENS)
    return Bullet(
        text=text,
        hash_refs=bullet.hash_refs,
        generation=generation,
        tokens=tok.count_tokens(text),
        first_position=bullet.first_position,
        role="user",
    )


def _regenerate(bullet: Bullet, generation: int) -> Bullet:
    return Bullet(
        text=bullet.text,
        hash_refs=bullet.hash_refs,
        generation=generation,
        tokens=bullet.tokens,
        first_position=bullet.first_position,
        protected=bullet.protected,
        role=bullet.role,
    )


def _check_reachable(raw: Sequence[Item], prior: Sequence[Bullet], new: Sequence[Bullet]) -> None:
    before = {item.hash for item in raw} | {h for b in prior for h in b.hash_refs}
    after = {h for b in new for h in b.hash_refs}
    missing = before - after
    if missing:
        raise AssertionError(f"compaction would orphan {len(missing)} chunk(s)")
