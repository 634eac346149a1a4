"""One fit's working state, and what every stage does with it (the stages are in `stages`).

The transcript is split into the seed (leading system messages and the first user message), the note
(the rolling summary and its notice, one system message) and the units after them (a conversation
turn, or a tool step with its results), each kept or dropped whole. The state assembles them back
into messages, sizes them in the provider's terms, and records every input message a stage rewrites
or drops (`evict`), once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from .judge import Judges
from .transcript import (
    NOTE_HEADER,
    NOTICE,
    PRIMING,
    THRESHOLD_FRACTION,
    Evicted,
    Message,
    is_ottoweb_text,
    tool_calls,
)
from .units import Msg, Unit, text_message, wrap


class FitState:
    """One call's working state: the seed, the note (rolling summary), and the units after them."""

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        window: int,
        judges: Judges,
        stored: bool,
        on_stage: Callable[[str, list[Message]], None] | None,
    ) -> None:
        self.window = window
        self.budget = int(window * THRESHOLD_FRACTION)
        self.judges = judges
        self.stored = stored
        self.on_stage = on_stage
        self.evicted: list[Evicted] = []
        self._evicted_origins: set[int] = set()
        self.factor = 1.0
        self.summary: list[str] = []
        self.notice: str | None = None
        self.note_changed = False
        self.note_input: Msg | None = None
        self._note_cache: Msg | None = None
        self.seed: list[Msg] = []
        self.units: list[Unit] = []
        self._parse(messages)

    # Parsing and assembling ------------------------------------------------------------------------

    def _parse(self, messages: Sequence[Message]) -> None:
        wrapped = [wrap(m, i) for i, m in enumerate(messages)]
        i = 0
        while i < len(wrapped) and wrapped[i].data["role"] == "system":
            i += 1
        if i < len(wrapped) and wrapped[i].data["role"] == "user":
            i += 1
        self.seed = wrapped[:i]
        if i < len(wrapped) and wrapped[i].data["role"] == "system":
            content = wrapped[i].data.get("content")
            if isinstance(content, str) and content.startswith(NOTE_HEADER):
                self.note_input = wrapped[i]
                self._read_note(content)
                i += 1
        while i < len(wrapped):
            msg = wrapped[i]
            if msg.data["role"] == "assistant" and tool_calls(msg.data):
                group = [msg]
                i += 1
                while i < len(wrapped) and wrapped[i].data["role"] == "tool":
                    group.append(wrapped[i])
                    i += 1
                self.units.append(Unit("tool", group))
            else:
                self.units.append(Unit("turn", [msg]))
                i += 1
        if self.units:
            self.units[-1].latest = True
        for unit in reversed(self.units):
            data = unit.msgs[0].data
            if unit.kind == "turn" and data["role"] == "user" and not is_ottoweb_text(data):
                unit.request = True
                break

    def _read_note(self, content: str) -> None:
        lines = content.splitlines()[1:]
        self.summary = [line[2:] for line in lines if line.startswith("- ")]
        for state, sentence in NOTICE.items():
            if sentence in lines:
                self.notice = state

    def _note(self) -> Msg | None:
        if not self.note_changed:
            return self.note_input
        if not self.summary and self.notice is None:
            return None
        lines = [NOTE_HEADER] + [f"- {b}" for b in self.summary]
        if self.notice is not None:
            lines.append(NOTICE[self.notice])
        text = "\n".join(lines)
        # size() asks for the note after every step of a stage; count its tokens once per version.
        if self._note_cache is None or self._note_cache.data["content"] != text:
            self._note_cache = text_message("system", text)
        return self._note_cache

    def messages(self) -> list[Message]:
        note = self._note()
        out = [m.data for m in self.seed]
        if note is not None:
            out.append(note.data)
        out += [m.data for u in self.units for m in u.msgs]
        return out

    def counted(self, units: int | None = None) -> int:
        """Our count of the transcript; `units`, when given, is the units' total already known (a
        stage that rewrites units one by one keeps it, instead of summing thousands each step)."""
        note = self._note()
        return (
            PRIMING
            + sum(m.tokens for m in self.seed)
            + (note.tokens if note is not None else 0)
            + (sum(u.tokens for u in self.units) if units is None else units)
        )

    def size(self, units: int | None = None) -> int:
        """The transcript's size in the provider's terms (our count, calibrated by what it reported)."""
        return math.ceil(self.counted(units) * self.factor)

    def calibrate(self, reported: int | None) -> None:
        # The provider's own count of (nearly) this transcript says how far cl100k under-counts its
        # tokenizer; never assume it over-counts, so the budget is not overrun on a guess.
        counted = self.counted()
        if reported is not None and counted > 0 and reported > counted:
            self.factor = reported / counted

    def done(self, stage: str, stages: list[str]) -> None:
        stages.append(stage)
        if self.on_stage is not None:
            self.on_stage(stage, self.messages())

    # Eviction -----------------------------------------------------------------------------------

    def evict(self, unit: Unit, stage: str) -> None:
        names = {c.id: c.name for c in unit.calls()}
        for msg in unit.msgs:
            # Our own stubs are not stored again: the originals they stand for already were (or the
            # stub says they were not).
            if msg.origin is None or msg.origin in self._evicted_origins or is_ottoweb_text(msg.data):
                continue
            self._evicted_origins.add(msg.origin)
            name = names.get(str(msg.data.get("tool_call_id"))) if msg.data["role"] == "tool" else None
            self.evicted.append(Evicted(index=msg.origin, message=msg.data, stage=stage, tool_name=name))

    def mark_removed(self) -> None:
        now = "stored" if self.stored else "unstored"
        self.notice = now if self.notice in (None, now) else "mixed"
        self.note_changed = True

    def _drop(self, units: Sequence[Unit], stage: str) -> None:
        ids = {id(u) for u in units}
        for unit in units:
            self.evict(unit, stage)
        self.units = [u for u in self.units if id(u) not in ids]
        self.mark_removed()
