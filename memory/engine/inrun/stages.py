"""The stages of a fit, in the order `fit` applies them (see the package docstring).

Each stage rewrites one call's working state (`state.FitState`: the seed, the note, the units, what
was evicted) and says whether it changed anything; `fit` runs them as far as needed.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence

from .. import tokens as tok
from ..prompt import SourceItem
from ..reply_parser import parse_reply
from .judge import Judges, Verdict, heuristic_still_needed, heuristic_verdicts
from .overflow import Overflow
from .state import FitState
from .transcript import (
    ARGUMENT_TOKENS,
    CALLS_AS_TEXT,
    CHECK_THRESHOLD,
    DIGEST_HEADER,
    DROP_CONFIDENCE,
    EXCERPT_TOKENS,
    EXTRACT,
    RAW_TOOL_FALLBACK,
    REFILL_FRACTION,
    RESULT_TOKENS,
    RESULTS_AS_TEXT,
    STEP_STORED,
    STEP_UNSTORED,
    SUMMARY_MIN_TOKENS,
    SUMMARY_SHARE,
    TOOL_HISTORY,
    TRIM_FALLBACK,
    TRIM_RATIO,
    TRIM_RATIO_STAGE,
    Fitted,
    Message,
    StepView,
    check_transcript,
    content_text,
    is_ottoweb_text,
    tool_calls,
)
from .units import NOTE_FRAME_TOKENS, Msg, Unit, body_lines, excerpt, text_message

log = logging.getLogger(__name__)


class _Fit(FitState):
    """The stages, as methods over one call's working state (`state.FitState`)."""

    def raw_tool_fallback(self) -> bool:
        """Turn every tool step into an assistant message and a user message of plain text."""
        changed = False
        for index, unit in enumerate(self.units):
            if unit.kind != "tool":
                continue
            call, results = unit.msgs[0], unit.msgs[1:]
            said = content_text(call.data.get("content"))
            call_lines = [CALLS_AS_TEXT] + ([said] if said else [])
            call_lines += [f"- called {c.name} with {c.arguments} (id {c.id})" for c in tool_calls(call.data)]
            names = {c.id: c.name for c in tool_calls(call.data)}
            result_lines = [RESULTS_AS_TEXT]
            for result in results:
                call_id = str(result.data.get("tool_call_id"))
                result_lines.append(f"- {names.get(call_id, 'tool')} (id {call_id}) returned:")
                result_lines.append(content_text(result.data.get("content")))
            self.evict(unit, RAW_TOOL_FALLBACK)
            self.units[index] = Unit(
                "turn",
                [
                    text_message("assistant", "\n".join(call_lines)),
                    text_message("user", "\n".join(result_lines)),
                ],
                latest=unit.latest,
            )
            changed = True
        return changed

    def _summary_cap(self) -> int:
        return max(SUMMARY_MIN_TOKENS, int(self.budget * SUMMARY_SHARE))

    def _fold_text(self, msg: Msg) -> tuple[str, str]:
        data = msg.data
        text = content_text(data.get("content"))
        if is_ottoweb_text(data):
            body = body_lines(text) or text.splitlines()[1:]
            return "bullet", "\n".join(body)
        return str(data["role"]), text

    def extract(self, target: int) -> bool:
        """Fold the oldest conversation turns (and earlier stubs) into the rolling summary."""
        foldable = [u for u in self.units if u.kind == "turn" and not u.latest and not u.request]
        if not foldable:
            return False
        # Fold only as many as bring the transcript to the target, allowing for the note to grow to
        # its largest: a full summary plus its framing, header and notice.
        note = self._note()
        largest = self._summary_cap() + NOTE_FRAME_TOKENS
        need = (
            self.counted() - math.floor(target / self.factor) + max(0, largest - (note.tokens if note else 0))
        )
        chosen: list[Unit] = []
        freed = 0
        for unit in foldable:
            chosen.append(unit)
            freed += unit.tokens
            if freed >= need:
                break
        items = [SourceItem(number=n + 1, role="bullet", text=b) for n, b in enumerate(self.summary)]
        for unit in chosen:
            for msg in unit.msgs:
                role, text = self._fold_text(msg)
                if text.strip():
                    items.append(SourceItem(number=len(items) + 1, role=role, text=text))
        self.summary = self._summarise(items, keep=list(self.summary))
        for unit in chosen:
            self.evict(unit, EXTRACT)
        chosen_ids = {id(u) for u in chosen}
        self.units = [u for u in self.units if id(u) not in chosen_ids]
        self.mark_removed()
        return True

    def _summarise(self, items: Sequence[SourceItem], *, keep: list[str]) -> list[str]:
        bullets: list[str] = []
        if items:
            try:
                parsed, _ = parse_reply(self.judges.summarize(items, budget=self._summary_cap()), len(items))
                bullets = [p.text for p in parsed]
            except Exception as exc:  # a failing summariser must not fail the run; excerpts stand in
                log.warning("in-run summary failed (%s); keeping excerpts", exc)
            if not bullets:
                bullets = keep + [excerpt(i.text, EXCERPT_TOKENS) for i in items if i.role != "bullet"]
        cap = self._summary_cap()
        # The oldest bullets go first: what they stood for is in the context tier (when stored).
        costs = [tok.count_tokens(f"- {b}") + 1 for b in bullets]
        total, first = sum(costs), 0
        while len(bullets) - first > 1 and total > cap:
            total -= costs[first]
            first += 1
        bullets = bullets[first:]
        if bullets and tok.count_tokens(f"- {bullets[0]}") + 1 > cap:
            bullets[0] = excerpt(bullets[0], cap - 4)
        return [" ".join(b.split()) for b in bullets if b.strip()]

    def _result_summary(self, text: str) -> str:
        if not text.strip():
            return "(no output)"
        try:
            parsed, _ = parse_reply(
                self.judges.summarize([SourceItem(1, "tool", text)], budget=RESULT_TOKENS), 1
            )
            if parsed:
                return excerpt(parsed[0].text, RESULT_TOKENS)
        except Exception as exc:  # as above: the excerpt is the fallback
            log.warning("tool-result summary failed (%s); keeping an excerpt", exc)
        return excerpt(text, RESULT_TOKENS)

    def _digest(self, unit: Unit) -> Msg:
        call, results = unit.msgs[0], unit.msgs[1:]
        by_id = {str(r.data.get("tool_call_id")): content_text(r.data.get("content")) for r in results}
        lines = [DIGEST_HEADER]
        said = content_text(call.data.get("content"))
        if said.strip():
            lines.append(f"- said: {excerpt(said, EXCERPT_TOKENS)}")
        for c in tool_calls(call.data):
            arguments = excerpt(c.arguments, ARGUMENT_TOKENS)
            lines.append(f"- {c.name}({arguments}) → {self._result_summary(by_id.get(c.id, ''))}")
        lines.append(STEP_STORED if self.stored else STEP_UNSTORED)
        return text_message("assistant", "\n".join(lines))

    def tool_history(self, target: int) -> bool:
        """Summarise the oldest tool steps, one text message each, until the target is met."""
        todo_steps = [u for u in self.units if u.kind == "tool" and u.has_write_todo()]
        # The newest todo list is the run's plan; it stays verbatim while older ones are summarised.
        newest_todo = todo_steps[-1] if todo_steps else None
        changed = False
        units = sum(u.tokens for u in self.units)
        for index, unit in enumerate(self.units):
            if self.size(units) <= target:
                break
            if unit.kind != "tool" or unit.latest or unit is newest_todo:
                continue
            self.evict(unit, TOOL_HISTORY)
            digest = Unit("turn", [self._digest(unit)])
            units += digest.tokens - unit.tokens
            self.units[index] = digest
            changed = True
        return changed

    def _step_view(self, position: int, unit: Unit) -> StepView:
        call, results = unit.msgs[0], unit.msgs[1:]
        by_id = {str(r.data.get("tool_call_id")): content_text(r.data.get("content")) for r in results}
        calls = tuple(tool_calls(call.data))
        return StepView(
            position=position,
            calls=calls,
            results=tuple(by_id.get(c.id, "") for c in calls),
            said=content_text(call.data.get("content")),
        )

    def _request_text(self) -> str:
        for unit in reversed(self.units):
            if unit.request:
                return content_text(unit.msgs[0].data.get("content"))
        return "\n".join(content_text(m.data.get("content")) for m in self.seed if m.data["role"] == "user")

    def trim_ratio(self, target: int) -> bool:
        """Drop, oldest first, tool steps the judge says are no longer needed (confidence ≥ 0.7)."""
        steps = [(p, u) for p, u in enumerate(self.units) if u.kind == "tool"]
        views = [self._step_view(p, u) for p, u in steps]
        request = self._request_text()
        judge = self.judges.still_needed
        verdicts: list[Verdict] | None = None
        if judge is heuristic_still_needed:
            # The offline judge's verdicts for every step in one pass: each step judged apart
            # against all the later ones would take time quadratic in the run's length.
            try:
                verdicts = heuristic_verdicts(views, request)
            except Exception as exc:  # as below: a judge that fails keeps every step
                log.warning("still-needed judge failed (%s); keeping the steps", exc)
                return False
        drop: list[Unit] = []
        for n, (_, unit) in enumerate(steps):
            if unit.latest or unit.has_write_todo():
                continue
            try:
                verdict = verdicts[n] if verdicts is not None else judge(views[n], views[n + 1 :], request)
            except Exception as exc:  # a judge that fails keeps the step: dropping needs confidence
                log.warning("still-needed judge failed (%s); keeping the step", exc)
                continue
            if not verdict.needed and verdict.confidence >= DROP_CONFIDENCE:
                drop.append(unit)
        # Each drop is counted against a running total, and all are removed at once at the end.
        units = sum(u.tokens for u in self.units)
        chosen: list[Unit] = []
        for unit in drop:
            if self.size(units) <= target:
                break
            chosen.append(unit)
            units -= unit.tokens
            self.mark_removed()
        if chosen:
            self._drop(chosen, TRIM_RATIO_STAGE)
        return bool(chosen)

    def trim_fallback(self, target: int) -> bool:
        """Drop the oldest exchange until the target is met: two conversation messages at a time,
        then the oldest tool step with its results; the latest user request goes last of all."""
        # The order never depends on what was dropped before, so it is laid out once and the size
        # kept as a running total: re-listing the units after each drop would be quadratic.
        order: list[list[Unit]] = []
        for unit in self.units:
            if unit.kind == "turn" and not unit.latest and not unit.request:
                if not order or sum(len(u.msgs) for u in order[-1]) >= 2:
                    order.append([])
                order[-1].append(unit)
        order += [[u] for u in self.units if u.kind == "tool" and not u.latest]
        requests = [u for u in self.units if u.request and not u.latest]
        if requests:
            order.append(requests)
        units = sum(u.tokens for u in self.units)
        batches = iter(order)
        dropped: list[Unit] = []
        changed = False
        while self.size(units) > target:
            batch = next(batches, None)
            if batch is not None:
                for unit in batch:
                    self.evict(unit, TRIM_FALLBACK)
                dropped += batch
                units -= sum(u.tokens for u in batch)
                self.mark_removed()
            elif self.summary:
                # Last resort: the summary's oldest lines (their originals are stored, or say not).
                self.summary.pop(0)
                self.note_changed = True
            else:
                break
            changed = True
        ids = {id(u) for u in dropped}
        self.units = [u for u in self.units if id(u) not in ids]
        return changed


def fit(
    messages: Sequence[Message],
    *,
    window: int,
    last_input_tokens: int | None = None,
    overflow: Overflow | None = None,
    model_switched: bool = False,
    judges: Judges | None = None,
    stored: bool = False,
    on_stage: Callable[[str, list[Message]], None] | None = None,
) -> Fitted:
    """Fit a transcript into `window` (already the learned value, if any); see the module docstring.

    `overflow` marks a context-length error on the last send (its limit learned by the caller);
    `model_switched` converts tool history to text; `stored` says a session keeps what is evicted,
    which is what the stubs then say. `on_stage` sees the transcript after every stage (tests).
    Raises TranscriptError for a transcript no provider would accept.
    """
    check_transcript(messages)
    state = _Fit(messages, window=window, judges=judges or Judges(), stored=stored, on_stage=on_stage)
    stages: list[str] = []
    reported = overflow.used if overflow is not None and overflow.used else None
    # Another model's token count says nothing about this one's tokenizer.
    if reported is None and not model_switched:
        reported = last_input_tokens
    state.calibrate(reported)
    if model_switched and any(u.kind == "tool" for u in state.units):
        state.raw_tool_fallback()
        state.done(RAW_TOOL_FALLBACK, stages)
    if overflow is not None:
        target = min(int(state.size() * TRIM_RATIO), state.budget)
        state.trim_ratio(target)
        state.done(TRIM_RATIO_STAGE, stages)
        if state.size() > target and state.trim_fallback(target):
            state.done(TRIM_FALLBACK, stages)
    else:
        state.done(CHECK_THRESHOLD, stages)
        if state.size() > state.budget:
            target = int(state.budget * REFILL_FRACTION)
            # Extract first, ToolHistory when still over; a second round folds the new stubs too.
            for _ in range(3):
                progressed = False
                if state.size() > target and state.extract(target):
                    state.done(EXTRACT, stages)
                    progressed = True
                if state.size() > target and state.tool_history(target):
                    state.done(TOOL_HISTORY, stages)
                    progressed = True
                if not progressed or state.size() <= target:
                    break
    size = state.size()
    return Fitted(
        messages=state.messages(),
        stages=stages,
        window=window,
        budget=state.budget,
        tokens=size,
        over_budget=size > state.budget,
        summary="\n".join(f"- {b}" for b in state.summary) or None,
        evicted=sorted(state.evicted, key=lambda e: e.index),
    )
