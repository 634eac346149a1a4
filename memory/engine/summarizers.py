"""The offline summariser: extractive, deterministic, no model (docs/sessions.md, "The rolling summary").

Each bullet says who and when, then keeps the turns' own words, in their order, trimmed:

    8 May 2023 · Caroline: I went to a LGBTQ support group yesterday (7 May 2023) · Melanie: …

How it chooses, within the room it is given (`budget`, in tokens):
- every sentence of every turn is a candidate, trimmed of openers ("Wow, ", "Hey Mel! ") and cut
  at a clause near 28 words; a sentence's worth is its `salience.fact_score` (names, numbers, dates,
  plans, preferences over greetings and chatter);
- a prior bullet handed back for re-abstraction is read back into its date, speakers and parts, so
  the names and dates of old bullets are kept, and its parts compete with the new ones on the same
  scores: the summary holds the most fact-bearing parts of everything it stands for, whatever
  their age;
- the best parts per token are taken until the room is spent; a part that says nothing a part
  already taken does not say is skipped;
- a relative day ("yesterday", "last year") is dated in brackets from the turn's own date, since a
  summary is read long after "yesterday" stopped meaning it;
- the parts are laid out in time order, one bullet per day (a long day in several), and every
  source is cited by the bullet nearest to it, so no hash is ever left uncited.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from . import tokens as tok
from .prompt import SourceItem, Summarizer
from .salience import content_words, fact_score, sentences, words
from .types import calendar_day

# The longest part kept from one sentence; a longer sentence is cut at a clause near it.
MAX_PART_WORDS = 28
# A bullet grows to about this many tokens before the next part starts a new bullet of the same day.
MAX_BULLET_TOKENS = 90
# Without a budget (a caller that sets none): about this share of the sources' tokens.
DEFAULT_SHARE = 0.25
# A part whose content words are this much inside a part already taken says nothing new.
DUPLICATE = 0.8
# A part scoring under this is a greeting or a reaction: left out however much room there is.
FLOOR = 0.5
# A tool's output (files read, test listings, logs) counts for this share of its words' worth: it
# is the bulk of an agent session, dense with names and numbers, and the agent's and the person's
# own sentences say what it meant. It stays verbatim in the store, a recall away (docs/sessions.md).
TOOL_WEIGHT = 0.25

DOT = " · "

# Openers that carry nothing: interjections, thanks, and a name called out before punctuation
# ("Hey Mel! "). A word that can also start a sentence's content ("So Caroline moved …", "No Bob
# did not …", "Great Barrier Reef …") counts only with punctuation after it.
_OPENER = re.compile(
    r"^(?:(?:(?i:hey|hi|hello|wow|whoa|oh|ah|aw+|yay|haha|lol|omg|hmm+|thanks|thank you|congrats|"
    r"congratulations)(?:\s+[A-Z]\w*(?=[,!.…]))?(?:[\s,!.…-]+|$))"
    r"|(?:(?i:yeah|yes|yep|yup|no|nah|ok|okay|well|so|cool|great|nice|awesome|amazing|sure|right|"
    r"totally|absolutely|definitely|honestly|actually)(?:\s+[A-Z]\w*)?[,!.…]+(?:\s+|$)))+"
)
_CLAUSE = re.compile(r"[,;:]\s+|\s+(?:-|–|—)\s+")


@dataclass(frozen=True, slots=True)
class Part:
    """A candidate piece of a bullet: the words kept, who said them, on which day, and from where."""

    text: str
    day: str
    speaker: str
    source: int  # the SourceItem number it comes from
    order: int  # its place among all parts, in time order
    score: float
    tokens: int
    weight: float = 1.0  # how much its worth counts against its cost (TOOL_WEIGHT for a tool's)


def _trim(sentence: str) -> str:
    """A sentence without its empty opener, cut at a clause near MAX_PART_WORDS words ("" when
    nothing but the opener is left)."""
    kept = _OPENER.sub("", sentence).strip()
    if kept and kept[0].islower() and kept != sentence.strip():
        kept = kept[0].upper() + kept[1:]
    split = kept.split()
    if len(split) <= MAX_PART_WORDS:
        return kept
    head = " ".join(split[:MAX_PART_WORDS])
    # The last clause boundary in the second half of the cut, else the cut itself.
    cuts = [m.start() for m in _CLAUSE.finditer(head) if m.start() > len(head) // 2]
    return (head[: cuts[-1]] if cuts else head).rstrip(" ,;:") + " …"


# Separators of the bullet format, kept out of the parts so a bullet can be read back.
def _clean(text: str) -> str:
    return text.replace("·", "-").replace(";", ",")


def _speaker(item: SourceItem) -> str:
    name = " ".join(item.name.split()) or item.role
    return _clean(name).replace(":", " ").strip() or item.role


_RELATIVE = re.compile(
    r"\b(yesterday|last night|tomorrow|last (?:week|weekend|month|year)|next (?:week|month|year)|"
    r"(?:last|this past) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(\d{1,5}|two|three|four|five|six) days ago)\b(?! \()",
    re.IGNORECASE,
)
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _dated(text: str, when: datetime | None) -> str:
    """`text` with each relative day dated from `when`: "yesterday (7 May 2023)"."""
    if when is None:
        return text

    def date(m: re.Match[str]) -> str:
        try:
            return f"{m.group(0)} ({resolve(m)})"
        except (OverflowError, ValueError):  # a day before year 1 or after 9999: left undated
            return m.group(0)

    def resolve(m: re.Match[str]) -> str:
        phrase = m.group(1).lower()
        if phrase in ("yesterday", "last night"):
            resolved = calendar_day(when - timedelta(days=1))
        elif phrase == "tomorrow":
            resolved = calendar_day(when + timedelta(days=1))
        elif phrase.endswith("days ago"):
            count = m.group(2).lower()
            resolved = calendar_day(when - timedelta(days=_NUMBERS.get(count) or int(count)))
        elif phrase in ("last week", "last weekend"):
            resolved = f"the {phrase.split()[1]} before {calendar_day(when)}"
        elif phrase == "next week":
            resolved = f"the week after {calendar_day(when)}"
        elif phrase == "last month":
            resolved = f"{(when.replace(day=1) - timedelta(days=1)):%B %Y}"
        elif phrase == "next month":
            resolved = f"{(when.replace(day=28) + timedelta(days=4)):%B %Y}"
        elif phrase == "last year":
            resolved = str(when.year - 1)
        elif phrase == "next year":
            resolved = str(when.year + 1)
        else:  # last <weekday>: the latest such day before `when`
            back = (when.weekday() - _WEEKDAYS.index(phrase.split()[-1])) % 7 or 7
            resolved = calendar_day(when - timedelta(days=back))
        return resolved

    return _RELATIVE.sub(date, text)


def _parts_of_turn(item: SourceItem, order: int, people: frozenset[str]) -> list[Part]:
    day = calendar_day(item.occurred_at) if item.occurred_at else ""
    speaker = _speaker(item)
    parts: list[Part] = []
    for sentence in sentences(item.text):
        trimmed = _trim(sentence)
        if not trimmed:
            continue
        text = _clean(_dated(trimmed, item.occurred_at))
        score, tokens = _measure(text, people)
        if score <= 0:
            continue
        weight = TOOL_WEIGHT if item.role == "tool" else 1.0
        parts.append(Part(text, day, speaker, item.number, order + len(parts), score, tokens, weight))
    return parts


def _measure(text: str, people: frozenset[str]) -> tuple[float, int]:
    """A part's worth and its tokens. Short parts' are kept (`_measured`): an earlier bullet's parts
    are read back and measured again at every compaction; a long one (a foreign bullet, say) is not
    worth the memory."""
    if len(text) > 2_000:
        return fact_score(text, people), tok.count_tokens(text)
    return _measured(text, people)


@lru_cache(maxsize=16_384)
def _measured(text: str, people: frozenset[str]) -> tuple[float, int]:
    return fact_score(text, people), tok.count_tokens(text)


@lru_cache(maxsize=1_024)
def _label_tokens(speaker: str) -> int:
    """What naming a speaker in a bullet costs (" · Caroline: "); a part is charged it in full."""
    return tok.count_tokens(f"{DOT}{speaker}: ")


_DAY = re.compile(r"^(\d{1,2} [A-Z][a-z]+ \d{4})" + re.escape(DOT))


def _parts_of_bullet(item: SourceItem, order: int, people: frozenset[str]) -> list[Part]:
    """A prior bullet read back into its parts. One in this summariser's own format gives its day,
    speakers and parts; any other (a live model's, an older format's) is one part with no day."""
    text = " ".join(item.text.split())
    m = _DAY.match(text)
    if m is None:
        return [Part(text, "", "", item.number, order, *_measure(text, people))]
    day, parts = m.group(1), list[Part]()
    for said in text[m.end() :].split(DOT):
        speaker, colon, body = said.partition(": ")
        if not colon:
            speaker, body = "", said
        for piece in body.split("; "):
            piece = piece.strip()
            if piece:
                parts.append(
                    Part(piece, day, speaker, item.number, order + len(parts), *_measure(piece, people))
                )
    return parts


def _cost(part: Part) -> int:
    return part.tokens + _label_tokens(part.speaker)


def _density(part: Part) -> float:
    """What a part is worth per token of the summary it would take."""
    return part.score * part.weight / _cost(part)


def _choose(parts: Sequence[Part], budget: int) -> list[Part]:
    """The best parts per token that fit `budget` (each charged its speaker's label), in time
    order; at least the best one, so a summary is never empty. A part whose content words are
    DUPLICATE inside one already chosen is skipped."""
    chosen: list[Part] = []
    said_by: list[frozenset[str]] = []
    # Which chosen parts hold each content word. A part repeating a chosen one shares at least
    # DUPLICATE of its words with it, so that one holds one of the part's rarest words: only
    # their holders need comparing.
    holders: dict[str, list[int]] = {}
    spent = 0
    for part in sorted(parts, key=lambda p: (-_density(p), p.order)):
        if chosen and part.score < FLOOR:
            # Greetings and reactions: not worth their tokens, even with room to spare. Not the
            # end of the list: a tool's part weighs less than its score, so it can come after one.
            continue
        cost = _cost(part)
        if chosen and spent + cost > budget:
            continue
        said = content_words(part.text)
        need = DUPLICATE * len(said)
        rarest = sorted(said, key=lambda w: len(holders.get(w, ())))[: len(said) - int(need) + 1]
        suspects = {k for word in rarest for k in holders.get(word, ())}
        if any(len(said & said_by[k]) >= need for k in suspects):
            continue
        for word in said:
            holders.setdefault(word, []).append(len(chosen))
        chosen.append(part)
        said_by.append(said)
        spent += cost
    return sorted(chosen, key=lambda p: p.order)


def _lines(chosen: Sequence[Part]) -> list[tuple[str, list[Part]]]:
    """Bullets of the chosen parts: one per day (a new one past MAX_BULLET_TOKENS), with the
    speaker named where it changes."""
    bullets: list[tuple[str, list[Part]]] = []
    text, day, speaker = "", None, None
    members: list[Part] = []
    size = 0  # the bullet's tokens so far: its parts' and a few for each label
    for part in chosen:
        new_day = part.day != day
        if new_day or size > MAX_BULLET_TOKENS:
            if members:
                bullets.append((text, members))
            text, members, speaker, size = "", [], None, 0
            day = part.day
            text = f"{part.day}{DOT}" if part.day else ""
        size += part.tokens + 4
        if part.speaker and part.speaker != speaker:
            text = _closed(text) + ("" if not members else DOT) + f"{part.speaker}: {part.text}"
        else:
            text = _closed(text) + ("; " if members else "") + part.text
        speaker = part.speaker
        members.append(part)
    if members:
        bullets.append((text, members))
    return bullets


def _closed(text: str) -> str:
    """A bullet before its next part: a full stop ending the part before goes ("…; next part")."""
    return text[:-1] if text.endswith((".", "!")) and not text.endswith("…") else text


def extractive_summarize(items: Sequence[SourceItem], budget: int | None = None) -> str:
    """Bullets of the most fact-bearing parts of `items` within `budget` tokens, citing every item."""
    if not items:
        return ""
    # The people talking: their names, said to each other all the time, tell nothing.
    people = frozenset(w.lower() for i in items for w in words(i.name))
    parts: list[Part] = []
    for item in items:
        reader = _parts_of_bullet if item.role == "bullet" else _parts_of_turn
        parts += reader(item, len(parts), people)
    if not parts:  # nothing but stop words: the first item stands for all, still saying who and when
        first = items[0]
        text = _clean(" ".join(first.text.split()))
        day = calendar_day(first.occurred_at) if first.occurred_at and first.role != "bullet" else ""
        parts = [Part(text, day, _speaker(first), first.number, 0, 0.0, tok.count_tokens(text))]
    if budget is None:
        budget = int(sum(tok.count_tokens(i.text) for i in items) * DEFAULT_SHARE)
    chosen = _choose(parts, budget)
    bullets = _lines(chosen)
    # The days' labels were not charged: while over budget, the least dense parts covering the
    # overshoot go, and the bullets are laid out again (a pass or two).
    over = sum(tok.count_tokens(text) for text, _ in bullets) - budget
    while len(chosen) > 1 and over > 0:
        for part in sorted(chosen, key=lambda p: (_density(p), -p.order)):
            if over <= 0 or len(chosen) == 1:
                break
            chosen.remove(part)
            over -= _cost(part)
        bullets = _lines(chosen)
        over = sum(tok.count_tokens(text) for text, _ in bullets) - budget
    # Every item is cited by the bullet holding its nearest chosen part (the one before it, else after).
    firsts = [members[0].source for _, members in bullets]
    cited: list[list[int]] = [[] for _ in bullets]
    for item in items:
        cited[max(0, bisect_right(firsts, item.number) - 1)].append(item.number)
    return "\n".join(
        f"- {text} [sources: {', '.join(map(str, numbers))}]"
        for (text, _), numbers in zip(bullets, cited, strict=True)
    )


def offline() -> Summarizer:
    """The default summariser: extractive, deterministic, needs no model or network."""
    return extractive_summarize
