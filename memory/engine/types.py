"""Plain data shapes the engine works on, and the storage protocol it needs."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

Role = Literal["user", "assistant", "tool", "system"]
Kind = Literal["history", "context"]
Tier = Literal["x", "y"]

ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")
KINDS: tuple[str, ...] = ("history", "context")

# What an item may carry beside its text (`name_problem`, `meta_problem`).
MAX_NAME_CHARS = 64
MAX_META_BYTES = 4096
MAX_META_DEPTH = 16

# A session id: what a URL segment carries without escaping. \Z, not $: "$" also matches before a
# trailing newline, which would let "demo\n" through.
SESSION_ID_CHARS = "A-Za-z0-9._:-"
SESSION_ID = re.compile(rf"^[{SESSION_ID_CHARS}]{{1,128}}\Z")


# What no name may hold beyond the control characters (Unicode category Cc, C1 included: U+0085
# is a line break to some readers, U+009B starts a terminal escape): line and paragraph separators,
# and the bidirectional embeddings, overrides and isolates that reorder the text around them.
NAME_REFUSED = frozenset("\u2028\u2029\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _refused_in_name(c: str) -> bool:
    return c in NAME_REFUSED or unicodedata.category(c) == "Cc"


def label_problem(label: str) -> str | None:
    """Why `label` cannot be a short label read on one line (a speaker's name, a note scope's app
    or conversation id), or None: no control character, line break or direction override."""
    bad = next((c for c in label if _refused_in_name(c)), None)
    if bad is not None:
        return f"must not contain control characters, line breaks or direction overrides (it holds U+{ord(bad):04X})"
    return None


def one_line_label(label: str, *, max_chars: int) -> str:
    """`label` as label_problem accepts it, in at most `max_chars` characters; a label it already
    accepts comes back as it is. Each run of refused characters that are whitespace (line breaks,
    tabs) becomes one space, every other refused character (a control character, a direction
    override or isolate) is dropped, and the ends are trimmed."""
    if len(label) <= max_chars and label_problem(label) is None:
        return label
    kept: list[str] = []
    in_break = False
    for c in label:
        if not _refused_in_name(c):
            kept.append(c)
            in_break = False
        elif c.isspace() and not in_break:
            kept.append(" ")
            in_break = True
    return "".join(kept).strip()[:max_chars].rstrip()


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace and invisible format characters (Unicode
    category Cf: the zero-width space U+200B, joiners U+200C-200D, the word joiner U+2060, the
    byte-order mark U+FEFF, …). str.strip() removes the first and not the second, so a text of one
    zero-width space passed for a text while one no-break space did not."""
    return all(c.isspace() or unicodedata.category(c) == "Cf" for c in text)


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a speaker's name, or None."""
    if len(name) > MAX_NAME_CHARS:
        return f"is {len(name)} characters; the limit is {MAX_NAME_CHARS}"
    # A name is indexed and shown as "name: text": a line break in it could pose as another turn,
    # and a direction override could make the line read as something else.
    return label_problem(name)


def clean_name(name: str) -> str:
    """`name` as a name `name_problem` accepts: each refused character a space, cut to the limit."""
    return "".join(" " if _refused_in_name(c) else c for c in name)[:MAX_NAME_CHARS]


# The JSON number policy of everything stored (docs/api.md, "Numbers"): integers and floats alike
# within what every JSON reader keeps exact (JavaScript's Number.MAX_SAFE_INTEGER), and finite.
# A float is held to it too: PostgreSQL's jsonb writes 1e20 back as the integer 100000000000000000000.
MAX_JSON_INT = 2**53 - 1


def number_problem(value: float) -> str | None:
    """Why a JSON number cannot be stored, or None (a bool is no number here)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number (NaN and Infinity are not JSON)"
    if not -MAX_JSON_INT <= value <= MAX_JSON_INT:
        return "is out of range: a number must lie between -9,007,199,254,740,991 and 9,007,199,254,740,991 (2^53 - 1)"
    return None


# Where a value lies inside another: its keys and list indices, outermost first (("a", 2, "b")).
Path = tuple[str | int, ...]


def path_suffix(path: Path) -> str:
    """`path` as it follows a field's name: ("a", 2, "b") is ".a[2].b"."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def json_problem(value: Any) -> tuple[Path, str] | None:
    """The first value in `value`, in document order, that no database stores as sent: a string
    that is not storable text (`text_problem`, keys included) or a number outside the policy
    (`number_problem`). As (where, why): `where` the path below `value` (() for itself).

    Walked without recursion: a hostile document may nest hundreds of levels deep.
    """
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, str):
            problem = text_problem(node)
        elif isinstance(node, int | float):
            problem = number_problem(node)
        elif isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and (problem := text_problem(key)):
                    return where, f"has a key that {problem}"
            stack.extend(((*where, key), item) for key, item in reversed(node.items()))
            continue
        elif isinstance(node, list | tuple):
            stack.extend(((*where, n), item) for n, item in reversed(list(enumerate(node))))
            continue
        else:
            continue
        if problem:
            return where, problem
    return None


def meta_problem(meta: Any) -> tuple[Path, str] | None:
    """Why `meta` cannot be stored as an item's meta, as (where, why), or None; `where` is the
    path below meta of the value at fault (() for meta itself), as `json_problem` names it."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return (), "must be a JSON object"

    # Walked without recursion: a hostile document may nest hundreds of levels deep.
    level: list[Any] = [meta]
    for _ in range(MAX_META_DEPTH):
        level = [
            child
            for value in level
            for child in (value.values() if isinstance(value, dict) else value)
            if isinstance(child, dict | list)
        ]
        if not level:
            break
    else:
        return (), f"nests deeper than {MAX_META_DEPTH} levels"
    found = json_problem(meta)
    if found:
        return found
    size = len(json.dumps(meta, ensure_ascii=False).encode("utf-8"))
    if size > MAX_META_BYTES:
        return (), f"is {size:,} bytes as JSON; the limit is {MAX_META_BYTES:,}"
    return None


# The numeric offset at the end of a time, as written ("+02:00", "-0330", "+02:00:30.5").
_OFFSET = re.compile(r"[+-][0-9:.,]+\Z")


def parse_moment(value: str) -> datetime:
    """An ISO 8601 time with an offset ("2023-05-08T13:56:00+02:00", "…Z"), as an aware datetime.

    Raises ValueError saying what is wrong. A time without an offset could be anywhere on Earth:
    it is refused rather than guessed; so is an offset that is not whole minutes, which could not
    be given back. What is kept is the instant, to the microsecond (digits past the sixth are
    dropped), and the offset; `format_moment` is the one form it is given back in.
    """
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError("is not an ISO 8601 time (e.g. 2023-05-08T13:56:00+02:00)") from None
    offset = parsed.utcoffset()
    if offset is None:
        raise ValueError("needs an offset: add Z or +hh:mm (e.g. 2023-05-08T13:56:00+02:00)")
    # Python reads an offset's seconds too ("+02:00:30"; "+00:00:00.5" it reads as +00:00).
    written = _OFFSET.search(text)
    if offset.total_seconds() % 60 or (written and sum(c.isdigit() for c in written.group()) > 4):
        raise ValueError("has an offset of seconds: it must be whole minutes (+hh:mm)")
    try:
        # Stored in UTC: 0001-01-01T00:00+01:00 or 9999-12-31T23:59-01:00 has no UTC time.
        parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range once converted to UTC") from None
    return parsed


def format_moment(when: datetime) -> str:
    """An aware time as every answer and export gives it back: ISO 8601 to the second (to the
    microsecond when it has any), then its offset, `Z` when that is zero
    ("2023-05-08T13:56:00.250000+02:00", "2023-05-08T11:56:00Z")."""
    text = when.isoformat(timespec="microseconds" if when.microsecond else "seconds")
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def calendar_day(when: datetime) -> str:
    """The day of a time, in its own offset, as people write it: "8 May 2023"."""
    return f"{when.day} {when:%B} {when.year}"


@dataclass(frozen=True, slots=True)
class Draft:
    """An item about to be appended: the store gives it a position."""

    role: str
    text: str
    hash: str
    tokens: int
    protected: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    # Who said it (a person's or an agent's name) and when it happened, as the caller told us.
    name: str = ""
    occurred_at: datetime | None = None
    # Kept verbatim in the prompt view, whatever its age, until unpinned.
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Item:
    """One appended turn, raw and verbatim. `position` orders a kind's items within a session.

    `meta` is the caller's own, stored and returned verbatim and never ranked; `name` and
    `occurred_at` are what ranking reads (the speaker, and the date beside the turn). A `pinned`
    item stays verbatim in the prompt view until unpinned (compaction carries it as a protected
    bullet that the protected share never moves out).
    """

    position: int
    role: str
    text: str
    hash: str
    tokens: int
    protected: bool = False
    meta: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""
    occurred_at: datetime | None = None
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Bullet:
    """A line of the rolling summary and the chunk hashes it stands for.

    A protected bullet is a person's turn carried verbatim (`hash_refs` is its own hash); a pinned
    one is a pinned turn, which stays until it is unpinned. `first_position` is the earliest source
    item's position, which keeps bullets in time order (a summary line drawing on turns on both
    sides of the person's verbatim words: its earliest source after them, `compaction._standing`).
    """

    text: str
    hash_refs: tuple[str, ...]
    generation: int
    tokens: int
    first_position: int
    protected: bool = False
    role: str | None = None
    pinned: bool = False
    # Who said it and when, for a bullet that is one turn (protected, pinned, a quote): the turn's
    # own; for a summary line, no name and the time of its earliest source.
    name: str = ""
    occurred_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TierTotals:
    """Token totals of one kind's live tiers, and its compaction generation."""

    x: int
    y_raw: int
    bullets: int
    protected: int
    generation: int

    @property
    def y(self) -> int:
        return self.y_raw + self.bullets


@dataclass(frozen=True, slots=True)
class View:
    """What a prompt reads: bullets (oldest), then Y's raw overflow, then X (newest)."""

    bullets: Sequence[Bullet]
    y_raw: Sequence[Item]
    x: Sequence[Item]


class TierStore(Protocol):
    """The storage the tiered queue needs; `memory/storage/tiers.py` implements it on the ORM.

    Every method acts on one session; `kind` namespaces history and context so they never mix.
    """

    def totals(self, kind: str) -> TierTotals: ...

    def add_to_x(self, kind: str, draft: Draft) -> Item:
        """Store the item's text as a chunk (idempotent by hash) and put the item at the end of X."""
        ...

    def archive(self, kind: str, draft: Draft) -> Item:
        """Store the item straight into the archive (chunk + position), bypassing the tiers."""
        ...

    def move_x_to_y(self, kind: str) -> None:
        """Move every X item to the end of Y's raw tier, order kept."""
        ...

    def items(self, kind: str, tier: Tier) -> list[Item]: ...

    def live_bullets(self, kind: str) -> list[Bullet]: ...

    def commit_compaction(
        self,
        kind: str,
        *,
        base_generation: int,
        archived_positions: Sequence[int],
        bullets: Sequence[Bullet],
    ) -> bool:
        """Replace the live bullets with `bullets` (generation base+1) and archive those raw items.

        The superseded generation is kept, marked. Returns False, changing nothing, when the
        kind's generation is no longer `base_generation` (another compaction got there first).
        """
        ...


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text on every supported database, or None when it can.

    PostgreSQL refuses NUL in text, and a lone surrogate (JSON "\\ud800") is no Unicode character:
    UTF-8 cannot encode it, so it would fail inside the database driver as a 500.
    """
    if "\x00" in value:
        return "must not contain NUL (\\u0000) characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must not contain lone surrogates (\\ud800-\\udfff): they are not Unicode characters"
    return None
