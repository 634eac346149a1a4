"""The pieces a fit works on: messages with their token counts, grouped into units (the seed, a
conversation turn, a tool step) that are kept or dropped whole."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .. import tokens as tok
from .transcript import NOTE_HEADER, NOTICE, Message, ToolCallView, is_write_todo, message_tokens, tool_calls


@dataclass(slots=True)
class Msg:
    data: Message
    tokens: int
    # Index in the caller's transcript; None for text this call wrote.
    origin: int | None


UnitKind = Literal["seed", "turn", "tool"]


@dataclass(slots=True)
class Unit:
    kind: UnitKind
    msgs: list[Msg]
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
NOTE_FRAME_TOKENS = message_tokens(
    {"role": "system", "content": NOTE_HEADER + "\n" + max(NOTICE.values(), key=len)}
)


def wrap(data: Message, origin: int | None) -> Msg:
    return Msg(data=data, tokens=message_tokens(data), origin=origin)


def text_message(role: str, text: str) -> Msg:
    return wrap({"role": role, "content": text}, None)


def excerpt(text: str, max_tokens: int) -> str:
    flat = " ".join(text.split())
    cut = tok.truncate_to_tokens(flat, max_tokens)
    return cut if cut == flat else cut.rstrip() + " …"


def body_lines(text: str) -> list[str]:
    """What of our own text carries meaning when it is folded again: its "- " lines."""
    return [line[2:] for line in text.splitlines() if line.startswith("- ")]
