"""Compaction: turn Y's raw items and prior bullets into a new generation of cited bullets.

Invariants (checked on every run, because a silent miss here is unrecoverable later):
- every raw item's hash and every prior bullet's hash_refs are cited by some new bullet, so every
  chunk stays reachable from the live generation (docs/decisions.md: uncited items were silently unreachable);
- protected items (a person's turns) and pinned items are never shown to the summariser and come
  out verbatim; a pinned one stays in the view until it is unpinned;
- a summariser reply that cannot be parsed, or an exception, loses nothing: every item is carried.

A model's prompt is built by `prompt.build_prompt`; its reply is read by `reply_parser`.
"""

from __future__ import annotations

import logging
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from . import tokens as tok
from .prompt import SourceItem, Summarizer
from .reply_parser import parse_reply
from .salience import INSTRUCTION, fact_score, instruction_score, is_instruction, sentences
from .types import Bullet, Item, calendar_day

log = logging.getLogger(__name__)

# Feeding prior bullets back through the summariser; measured 8/8 either way and kept it on.
REABSTRACT = True
# Words an uncited raw item keeps when it becomes its own bullet.
EXCERPT_TOKENS = 48
# No single non-protected bullet grows past this when the engine has to merge bullets itself.
MAX_MERGED_TOKENS = 120
# Words of a person's turn that leaves the live view kept in the bullet citing it (`quote_excerpt`):
# its instructions whole, then its start; the turn itself stays verbatim in the store.
QUOTE_TOKENS = 32
# The bullets citing the person's earlier words fill at most this share of the compaction target.
QUOTE_FRACTION = 0.25
# A quote keeps one instruction whole up to this many times its room rather than cut it.
INSTRUCTION_REACH = 3


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


def _excerpt(text: str, max_tokens: int) -> str:
    flat = " ".join(text.split())
    cut = tok.truncate_to_tokens(flat, max_tokens)
    return cut if cut == flat else cut.rstrip() + " …"


def quote_excerpt(text: str, max_tokens: int) -> str:
    """The person's words cut to about `max_tokens`, never inside an instruction.

    Whole sentences only: the turn's instructions (`salience.is_instruction`) that fit — or, when
    none does, the first of them whole if it is under INSTRUCTION_REACH × `max_tokens` — then the
    other sentences from the start while they fit, shown in their order with "…" where sentences
    were left out. Only a turn that instructs nothing and whose first sentence is too long is cut
    at a word.
    """
    said = sentences(text)
    if not said:
        return ""
    instructions = [i for i, s in enumerate(said) if is_instruction(s)]
    instructing = set(instructions)
    kept: list[int] = []
    spent = 0
    for i in instructions:
        cost = tok.count_tokens(said[i]) + 1
        if spent + cost <= max_tokens:
            kept.append(i)
            spent += cost
    if instructions and not kept:
        cost = tok.count_tokens(said[instructions[0]]) + 1
        if cost <= INSTRUCTION_REACH * max_tokens:
            kept, spent = [instructions[0]], cost
    for i in range(len(said)):
        if i in instructing:
            continue
        cost = tok.count_tokens(said[i]) + 1
        if spent + cost > max_tokens:
            break
        kept.append(i)
        spent += cost
    if not kept:
        return _excerpt(said[0], max_tokens)
    kept.sort()
    out: list[str] = ["…"] if kept[0] > 0 else []
    for n, i in enumerate(kept):
        if n > 0 and i > kept[n - 1] + 1:
            out.append("…")
        out.append(said[i])
    if kept[-1] < len(said) - 1:
        out.append("…")
    return " ".join(out)


def is_quote(bullet: Bullet) -> bool:
    """Whether the bullet quotes protected turns that left the live view — a person's earlier
    words, or (rarely) a turn sent protected by another role: not protected itself, so it can be
    merged with quotes of the same role; never shown to the summariser."""
    return not bullet.protected and bool(bullet.role)


def _saying(text: str) -> str:
    """What makes two sayings the same: their words, lower case, punctuation out; for one with no
    word ("👍", "+1"), its text as it is, so that "👎" is no repeat of it."""
    return " ".join(re.findall(r"\w+", text.lower())) or " ".join(text.split())


def _merge(
    a: Bullet, b: Bullet, generation: int, verbatim: Sequence[int] = (), *, repeat: bool = False
) -> Bullet:
    """`a` and `b` as one bullet citing both; with `repeat` (`b` says again what `a` holds), `a`'s
    text alone."""
    half = MAX_MERGED_TOKENS // 2
    quotes = is_quote(a) and a.role == b.role
    # Two quotes of one role merge into a quote, whose instructions stay whole.
    shorten = quote_excerpt if quotes else _excerpt
    text = a.text if repeat else f"{shorten(a.text, half)} / {shorten(b.text, half)}"
    refs = tuple(dict.fromkeys(a.hash_refs + b.hash_refs))
    return Bullet(
        text=text,
        hash_refs=refs,
        generation=generation,
        tokens=tok.count_tokens(text),
        first_position=_standing([a.first_position, b.first_position], verbatim),
        # Anything but two quotes merges into a plain summary line.
        role=a.role if quotes else None,
        name=a.name if a.name == b.name else "",
        occurred_at=min((t for t in (a.occurred_at, b.occurred_at) if t), default=None),
    )


def _collapse_repeats(quotes: list[Bullet], generation: int) -> list[Bullet]:
    """Quotes in time order, each that an earlier quote of its role already holds word for word
    folded into that one (its text kept, both cited): a request the person repeated ("Run the
    tests again." … "run the tests again!") is quoted once. Whole sayings only: "deploy to staging"
    is no repeat of "don't deploy to staging until Friday". Afterwards no two quotes repeat each
    other, so merging them to fit (`_fit`) never meets a repeat."""
    kept: list[Bullet] = []
    said: dict[tuple[str | None, str], int] = {}  # (role, a saying): the quote holding it
    for quote in quotes:
        held = said.get((quote.role, _saying(quote.text)))
        if held is None:
            said.update({(quote.role, _saying(part)): len(kept) for part in quote.text.split(" / ")})
            kept.append(quote)
        else:
            kept[held] = _merge(kept[held], quote, generation, repeat=True)
    return kept


def _fit(
    bullets: list[Bullet], target_tokens: int, generation: int, verbatim: Sequence[int] = ()
) -> tuple[list[Bullet], int]:
    """Merge the oldest non-protected bullets until the generation fits `target_tokens`.

    This is the engine's own guarantee that compaction shrinks Y whatever the summariser did;
    merging keeps every hash ref, so nothing becomes unreachable. `bullets` are in time order; the
    oldest free bullet absorbs the next one of its kind (quotes of one role together, plain lines
    together). Lines on the same side of the turns kept word for word (`verbatim`, their positions)
    are merged first; a line merged across them stands after them (`_standing`).
    """
    bullets = list(bullets)
    total = sum(b.tokens for b in bullets)
    merges = 0

    def side(b: Bullet) -> int:
        return bisect_left(verbatim, b.first_position)

    for across in (False, True):
        i = 0
        while total > target_tokens and i < len(bullets):
            first = bullets[i]
            j = None
            if not first.protected:
                j = next(
                    (
                        k
                        for k in range(i + 1, len(bullets))
                        if not bullets[k].protected
                        and bullets[k].role == first.role
                        and (across or side(bullets[k]) == side(first))
                    ),
                    None,
                )
            if j is None:
                i += 1
                continue
            merged = _merge(first, bullets[j], generation, verbatim)
            total += merged.tokens - first.tokens - bullets[j].tokens
            bullets[i] = merged
            del bullets[j]
            merges += 1
    if total > target_tokens:
        free = [i for i, b in enumerate(bullets) if not b.protected]
        if free:
            only = bullets[free[0]]
            room = max(8, target_tokens - (total - only.tokens))
            text = quote_excerpt(only.text, room) if is_quote(only) else _excerpt(only.text, room)
            bullets[free[0]] = replace(only, text=text, generation=generation, tokens=tok.count_tokens(text))
    return bullets, merges


def _staying_power(bullet: Bullet) -> tuple[float, float]:
    """(instruction, facts): 0 then the instruction's score, so that chatter leaves before any
    instruction and the weakest-worded instructions before the others; then the turn's most
    factual sentence (`salience.fact_score`: names, numbers, days, plans), so that among equals
    "ok, thanks" leaves before "my new manager is Priya Raman"."""
    score = instruction_score(bullet.text)
    facts = max((fact_score(s) for s in sentences(bullet.text)), default=0.0)
    return (score if score >= INSTRUCTION else 0.0), facts


def _leaving(protected: Sequence[Bullet], target: int) -> list[Bullet]:
    """The protected bullets that leave the view so the rest fit `target`: chatter before
    instructions (a turn with a sentence scoring `salience.INSTRUCTION`), the weakest instructions
    before the strongest, the turns telling the fewest facts first among equals, then the oldest;
    a pinned one never."""
    kept = sum(b.tokens for b in protected)
    leaving: list[Bullet] = []
    movable = sorted(
        (b for b in protected if not b.pinned), key=lambda b: (*_staying_power(b), b.first_position)
    )
    for bullet in movable:
        if kept <= target:
            break
        leaving.append(bullet)
        kept -= bullet.tokens
    return leaving


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
    (the type-blind arm of eval_compaction) they are summarised like any other item. Pinned items
    are carried verbatim either way.

    `protected_target` bounds the verbatim protected bullets, pinned ones included (None:
    unbounded, the seed's policy). Past it, chatter leaves before instructions (`_leaving`): each
    turn that leaves becomes a quote bullet (`is_quote`) holding its instructions whole, or its
    start, and its hash, never summarised; quotes are merged only with quotes, into at most
    QUOTE_FRACTION of `target_tokens`. The turns themselves stay verbatim in the store.
    The summariser is given what is left of `target_tokens` as its budget.
    """
    result = CompactionResult(bullets=[], generation=generation)
    protected: list[Bullet] = []
    quotes: list[Bullet] = []
    passthrough: list[Bullet] = []
    # Each numbered source: (source item, hash_refs, first_position, prior bullet or None).
    sources: list[tuple[SourceItem, tuple[str, ...], int, Bullet | None]] = []

    for bullet in prior:
        if bullet.pinned or (bullet.protected and protect):
            protected.append(_regenerate(bullet, generation))
        elif is_quote(bullet) and protect:
            quotes.append(_regenerate(bullet, generation))
        elif reabstract:
            source = SourceItem(len(sources) + 1, "bullet", bullet.text, occurred_at=bullet.occurred_at)
            sources.append((source, bullet.hash_refs, bullet.first_position, bullet))
        else:
            passthrough.append(_regenerate(bullet, generation))
    for item in raw:
        if item.pinned or (item.protected and protect):
            protected.append(
                Bullet(
                    text=item.text,
                    hash_refs=(item.hash,),
                    generation=generation,
                    tokens=item.tokens,
                    first_position=item.position,
                    protected=True,
                    role=item.role,
                    pinned=item.pinned,
                    name=item.name,
                    occurred_at=item.occurred_at,
                )
            )
        else:
            source = SourceItem(len(sources) + 1, item.role, item.text, item.name, item.occurred_at)
            sources.append((source, (item.hash,), item.position, None))

    if protected_target is not None and protect:
        leaving = _leaving(protected, protected_target)
        gone = {id(b) for b in leaving}
        protected = [b for b in protected if id(b) not in gone]
        quotes += [_quote(b, generation) for b in leaving]
        # Quotes fill what the verbatim turns leave of the target, at most QUOTE_FRACTION of it: a
        # share near 1 leaves them little, and the generation still fits Y.
        kept = sum(b.tokens for b in protected)
        room = min(int(target_tokens * QUOTE_FRACTION), max(0, target_tokens - kept))
        quotes = _collapse_repeats(sorted(quotes, key=lambda b: b.first_position), generation)
        quotes, merged = _fit(quotes, room, generation)
        result.merged += merged
    protected.sort(key=lambda b: b.first_position)
    free_target = max(0, target_tokens - sum(b.tokens for b in protected) - sum(b.tokens for b in quotes))

    verbatim = sorted(b.first_position for b in protected + quotes)
    numbered = [replace(s, segment=bisect_left(verbatim, first)) for s, _, first, _ in sources]
    result.summarised = len(numbered)
    reply = ""
    if numbered:
        try:
            reply = summarize(numbered, budget=free_target)
        except Exception as exc:  # a failing summariser must cost quality, never content
            log.warning("summariser failed, carrying every item forward: %s", exc)
            result.summarizer_error = f"{type(exc).__name__}: {exc}"
    parsed, result.unparsed_lines = parse_reply(reply, len(numbered))

    cited: set[int] = set()
    summary: list[Bullet] = []
    for p in parsed:
        refs = tuple(dict.fromkeys(h for n in p.sources for h in sources[n - 1][1]))
        summary.append(
            Bullet(
                text=p.text,
                hash_refs=refs,
                generation=generation,
                tokens=tok.count_tokens(p.text),
                first_position=_standing([sources[n - 1][2] for n in p.sources], verbatim),
                occurred_at=_earliest(sources[n - 1][0].occurred_at for n in p.sources),
            )
        )
        cited.update(p.sources)
    result.cited = len(cited)

    for number, (source, refs, first, prior_bullet) in enumerate(sources, start=1):
        if number in cited:
            continue
        result.carried += 1
        if prior_bullet is not None:
            summary.append(_regenerate(prior_bullet, generation))
        else:
            # Who said it and when, then the start of its words.
            said = f"{calendar_day(source.occurred_at)} · " if source.occurred_at else ""
            excerpt = said + f"{source.name or source.role}: " + _excerpt(source.text, EXCERPT_TOKENS)
            summary.append(
                Bullet(
                    text=excerpt,
                    hash_refs=refs,
                    generation=generation,
                    tokens=tok.count_tokens(excerpt),
                    first_position=first,
                    occurred_at=source.occurred_at,
                )
            )

    fitted, merged = _fit(
        sorted(summary + passthrough, key=lambda b: b.first_position), free_target, generation, verbatim
    )
    result.merged += merged
    result.bullets = sorted(fitted + protected + quotes, key=lambda b: b.first_position)
    _check_reachable(raw, prior, result.bullets)
    return result


def _standing(positions: Sequence[int], verbatim: Sequence[int]) -> int:
    """Where a summary line stands: its earliest source, or, when its sources lie on both sides of
    the person's verbatim turns, its earliest source after the last of them — whatever the
    summariser joined, the view never shows an answer before the words it answers."""
    last = max(bisect_left(verbatim, p) for p in positions)
    return min(p for p in positions if bisect_left(verbatim, p) == last)


def _earliest(times: Iterable[datetime | None]) -> datetime | None:
    return min((t for t in times if t is not None), default=None)


def _quote(bullet: Bullet, generation: int) -> Bullet:
    """A protected bullet leaving the view: the instructions of its words whole, else their start,
    citing the turn; it keeps its role (the person's: "user")."""
    text = quote_excerpt(bullet.text, QUOTE_TOKENS)
    return replace(
        bullet,
        text=text,
        generation=generation,
        tokens=tok.count_tokens(text),
        protected=False,
        pinned=False,
        role=bullet.role or "user",
    )


def _regenerate(bullet: Bullet, generation: int) -> Bullet:
    return replace(bullet, generation=generation)


def _check_reachable(raw: Sequence[Item], prior: Sequence[Bullet], new: Sequence[Bullet]) -> None:
    before = {item.hash for item in raw} | {h for b in prior for h in b.hash_refs}
    after = {h for b in new for h in b.hash_refs}
    missing = before - after
    if missing:
        raise AssertionError(f"compaction would orphan {len(missing)} chunk(s)")
