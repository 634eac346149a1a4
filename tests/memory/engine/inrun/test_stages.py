"""In-run compaction's stages (memory/engine/inrun/stages.py): fit, its invariants, trims, overflows
and model switches. No database."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from memory.engine import inrun
from memory.engine.inrun import (
    DIGEST_HEADER,
    NOTE_HEADER,
    NOTICE,
    STEP_STORED,
    STEP_UNSTORED,
    Judges,
    Overflow,
    StepView,
    Verdict,
    fit,
    parse_overflow,
    transcript_tokens,
)
from memory.engine.prompt import SourceItem
from tests.memory.engine.inrun.transcripts import assert_paired, prose, seed_messages, step


def tool_run(calls: int, *, seed: int = 3, words: int = 220) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    messages = seed_messages()
    for n in range(calls):
        messages += step(f"call_{n}", "read_file", {"path": f"src/mod_{n}.py"}, prose(rng, words))
    return messages


def test_fit_under_budget_returns_the_transcript_unchanged():
    messages = tool_run(3)

    fitted = fit(messages, window=128000)

    assert fitted.messages == messages
    assert all(a is b for a, b in zip(fitted.messages, messages, strict=True))
    assert (fitted.stages, fitted.evicted, fitted.summary) == (["CheckThreshold"], [], None)
    assert (fitted.window, fitted.budget, fitted.tokens) == (128000, 102400, transcript_tokens(messages))


def test_fit_threshold_is_checked_against_last_input_tokens():
    messages = tool_run(6)
    window = int(transcript_tokens(messages) / 0.8) + 50  # the count alone is under the budget

    quiet = fit(messages, window=window)
    loud = fit(messages, window=window, last_input_tokens=window)

    assert quiet.stages == ["CheckThreshold"]
    assert loud.stages == ["CheckThreshold", "ToolHistory"]
    assert loud.tokens <= int(loud.budget * inrun.REFILL_FRACTION)


def chat_run(turns: int, *, seed: int = 5) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    messages = seed_messages()
    for n in range(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": prose(rng, 80)})
    return messages


def test_fit_folds_older_conversation_turns_into_the_rolling_summary_first():
    messages = chat_run(30) + step("c1", "read_file", {"path": "a.py"}, "print('hi')")
    window = int(transcript_tokens(messages) / 0.8 * 0.7)

    fitted = fit(messages, window=window)

    assert fitted.stages == ["CheckThreshold", "ExtractContextHistories"]
    assert fitted.messages[:2] == messages[:2]
    note = fitted.messages[2]
    assert note["role"] == "system" and note["content"].startswith(NOTE_HEADER + "\n- ")
    assert note["content"].endswith(NOTICE["unstored"])
    assert fitted.summary is not None and fitted.summary in note["content"]
    # The latest step and the latest user request are kept verbatim, after the note.
    assert fitted.messages[-2:] == messages[-2:]
    assert messages[30] in fitted.messages  # turn 28: the last user turn
    # The oldest turns were folded, and each is reported for the context tier.
    assert [e.index for e in fitted.evicted] == list(range(2, 2 + len(fitted.evicted)))
    assert {e.stage for e in fitted.evicted} == {"ExtractContextHistories"}
    assert fitted.tokens <= int(fitted.budget * inrun.REFILL_FRACTION)


def test_fit_summarises_the_oldest_tool_steps_when_no_turns_are_left_to_fold():
    messages = tool_run(12)
    window = int(transcript_tokens(messages) / 0.8 * 0.8)

    fitted = fit(messages, window=window)

    assert fitted.stages == ["CheckThreshold", "ToolHistory"]
    digest = fitted.messages[2]
    assert digest["role"] == "assistant" and "tool_calls" not in digest
    assert digest["content"].startswith(DIGEST_HEADER + '\n- read_file({"path": "src/mod_0.py"}) → ')
    assert digest["content"].endswith(STEP_UNSTORED)
    assert [e.index for e in fitted.evicted][:2] == [2, 3]
    assert fitted.evicted[1].text.startswith("[tool result of read_file, call call_0]\n")
    assert fitted.messages[-2:] == messages[-2:]


def test_stubs_say_the_original_is_searchable_only_when_a_session_stores_it():
    messages = tool_run(12)
    window = int(transcript_tokens(messages) / 0.8 * 0.8)

    stored = fit(messages, window=window, stored=True)
    unstored = fit(messages, window=window, stored=False)

    assert stored.messages[2]["content"].endswith(STEP_STORED)
    assert 'recall (kind "context")' in STEP_STORED
    assert unstored.messages[2]["content"].endswith(STEP_UNSTORED)
    assert "run the step again" in STEP_UNSTORED


def test_fit_keeps_the_newest_todo_list_verbatim_while_summarising_older_steps():
    messages = tool_run(4)
    messages += step("todo", "write_todo", {"items": ["fix login", "run tests"]}, "saved")
    messages += tool_run(8, seed=9)[2:]
    window = int(transcript_tokens(messages) / 0.8 * 0.3)

    fitted = fit(messages, window=window)

    todo = messages[10:12]
    assert fitted.messages[fitted.messages.index(todo[0]) + 1] is todo[1]


def test_fit_rolls_the_summary_over_many_calls_with_one_note():
    rng = random.Random(11)
    messages = seed_messages()
    for n in range(60):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": prose(rng, 60)})
        fitted = fit(messages, window=3000)
        messages = fitted.messages

        notes = [m for m in messages if str(m.get("content", "")).startswith(NOTE_HEADER)]
        assert len(notes) <= 1
        assert fitted.tokens <= fitted.budget
    assert fitted.summary is not None
    summary_tokens = sum(inrun.tok.count_tokens(line) + 1 for line in fitted.summary.splitlines())
    assert summary_tokens <= max(inrun.SUMMARY_MIN_TOKENS, int(fitted.budget * inrun.SUMMARY_SHARE))


def test_a_failing_summariser_still_fits_with_excerpts():
    def broken(items: Sequence[SourceItem], budget: int | None = None) -> str:
        raise RuntimeError("model down")

    messages = chat_run(30) + step("c1", "read_file", {"path": "a.py"}, "print('hi')")
    window = int(transcript_tokens(messages) / 0.8 * 0.7)

    fitted = fit(messages, window=window, judges=Judges(summarize=broken))

    assert fitted.stages == ["CheckThreshold", "ExtractContextHistories"]
    assert fitted.tokens <= fitted.budget
    # Each summary line is the opening of a folded turn, word for word.
    folded = [" ".join(e.message["content"].split()) for e in fitted.evicted]
    lines = [line.removeprefix("- ").removesuffix(" …") for line in (fitted.summary or "").splitlines()]
    assert lines and all(any(text.startswith(line) for text in folded) for line in lines)


def test_trim_ratio_drops_superseded_steps_before_anything_else():
    rng = random.Random(2)
    messages = seed_messages()
    for n in range(10):
        messages += step(f"r{n}", "read_file", {"path": "src/login.py"}, prose(rng, 200))
    messages += step("g1", "grep", {"pattern": "session_timeout"}, prose(rng, 200))
    messages += step("r10", "read_file", {"path": "src/login.py"}, prose(rng, 200))

    fitted = fit(messages, window=128000, overflow=Overflow())

    assert fitted.stages == ["TrimRatio"]
    assert {e.stage for e in fitted.evicted} == {"TrimRatio"}
    # Only repeated reads went, oldest first; the grep (a different call) and the latest stay.
    dropped = {e.message.get("tool_call_id") for e in fitted.evicted if e.message["role"] == "tool"}
    assert dropped == {f"r{n}" for n in range(len(dropped))}
    assert messages[22] in fitted.messages and messages[23] in fitted.messages
    assert fitted.messages[-2:] == messages[-2:]
    assert fitted.tokens <= int(transcript_tokens(messages) * inrun.TRIM_RATIO)


def test_trim_ratio_never_asks_about_the_latest_step_or_a_write_todo_call():
    asked: list[str] = []

    def drop_everything(step_view: StepView, later: Sequence[StepView], request: str) -> Verdict:
        asked.append(step_view.calls[0].id)
        return Verdict(False, 1.0, "test")

    messages = seed_messages()
    for n in range(3):
        messages += step(f"a{n}", "read_file", {"path": f"a{n}.py"}, "text " * 50)
    messages += step("todo", "write_todo", {"items": ["fix login"]}, "saved")
    for n in range(3):
        messages += step(f"b{n}", "grep", {"pattern": f"p{n}"}, "match " * 50)

    fitted = fit(messages, window=128000, overflow=Overflow(), judges=Judges(still_needed=drop_everything))

    assert asked == ["a0", "a1", "a2", "b0", "b1"]
    assert fitted.stages == ["TrimRatio"]
    assert messages[8] in fitted.messages and messages[9] in fitted.messages
    assert fitted.messages[-2:] == messages[-2:]


def test_trim_ratio_needs_a_confidence_of_at_least_point_seven():
    def unsure(step_view: StepView, later: Sequence[StepView], request: str) -> Verdict:
        return Verdict(False, 0.69, "unsure")

    fitted = fit(tool_run(8), window=128000, overflow=Overflow(), judges=Judges(still_needed=unsure))

    assert fitted.stages == ["TrimRatio", "TrimFallback"]
    assert {e.stage for e in fitted.evicted} == {"TrimFallback"}


def test_trim_fallback_drops_two_conversation_messages_at_a_time_then_the_oldest_tool_step():
    rng = random.Random(4)
    small = [{"role": "user" if n % 2 == 0 else "assistant", "content": prose(rng, 40)} for n in range(4)]
    tools = step("s1", "run_tests", {"k": 1}, prose(rng, 400)) + step(
        "s2", "run_tests", {"k": 2}, prose(rng, 400)
    )
    request = {"role": "user", "content": "Continue."}
    latest = step("s3", "run_tests", {"k": 3}, prose(rng, 400))
    messages = seed_messages() + small + tools + [request] + latest
    keep_all = Judges(still_needed=lambda s, later, r: Verdict(True, 1.0, "test"))

    fitted = fit(messages, window=128000, overflow=Overflow(), judges=keep_all)

    assert fitted.stages == ["TrimRatio", "TrimFallback"]
    # Conversation first, two at a time (all four), then the oldest tool step; then the target is met.
    assert [e.index for e in fitted.evicted] == [2, 3, 4, 5, 6, 7]
    assert fitted.messages[3:] == tools[2:] + [request] + latest
    assert fitted.messages[2]["content"] == NOTE_HEADER + "\n" + NOTICE["unstored"]


def test_trim_fallback_stops_once_two_messages_meet_the_target():
    rng = random.Random(4)
    big = [{"role": "user" if n % 2 == 0 else "assistant", "content": prose(rng, 300)} for n in range(4)]
    latest = step("s3", "run_tests", {"k": 3}, prose(rng, 100))
    messages = seed_messages() + big + latest
    keep_all = Judges(still_needed=lambda s, later, r: Verdict(True, 1.0, "test"))

    fitted = fit(messages, window=128000, overflow=Overflow(), judges=keep_all, stored=True)

    assert [e.index for e in fitted.evicted] == [2, 3]
    assert fitted.messages[2]["content"] == NOTE_HEADER + "\n" + NOTICE["stored"]
    assert fitted.messages[3:] == big[2:] + latest


def test_an_overflow_cuts_to_the_smaller_of_eighty_percent_and_the_new_budget():
    messages = tool_run(40)
    size = transcript_tokens(messages)

    fitted = fit(messages, window=4096, overflow=parse_overflow("maximum context length is 4096 tokens"))

    assert size * 0.8 > 4096 * 0.8
    assert fitted.tokens <= int(4096 * 0.8)
    assert fitted.over_budget is False


def test_an_overflow_size_reported_by_the_provider_calibrates_the_count():
    messages = tool_run(10)
    size = transcript_tokens(messages)
    keep_all = Judges(still_needed=lambda s, later, r: Verdict(True, 1.0, "test"))

    # The provider counted twice what cl100k counts: the cut must reach 80 % of ITS count.
    fitted = fit(messages, window=128000, overflow=Overflow(used=2 * size), judges=keep_all)

    assert fitted.tokens <= int(2 * size * inrun.TRIM_RATIO)
    assert transcript_tokens(fitted.messages) <= int(size * inrun.TRIM_RATIO)


def test_a_model_switch_turns_tool_history_into_plain_text():
    messages = tool_run(3) + [{"role": "assistant", "content": "Done reading."}]

    fitted = fit(messages, window=128000, model_switched=True)

    assert fitted.stages == ["RawToolFallback", "CheckThreshold"]
    assert all("tool_calls" not in m and m["role"] != "tool" for m in fitted.messages)
    assert [m["role"] for m in fitted.messages] == ["system", "user"] + ["assistant", "user"] * 3 + [
        "assistant"
    ]
    for n in range(3):
        calls, results = fitted.messages[2 + 2 * n], fitted.messages[3 + 2 * n]
        assert calls["content"] == (
            f'{inrun.CALLS_AS_TEXT}\n- called read_file with {{"path": "src/mod_{n}.py"}} (id call_{n})'
        )
        assert results["content"] == (
            f"{inrun.RESULTS_AS_TEXT}\n- read_file (id call_{n}) returned:\n{messages[3 + 2 * n]['content']}"
        )
    assert [e.index for e in fitted.evicted] == [2, 3, 4, 5, 6, 7]
    assert {e.stage for e in fitted.evicted} == {"RawToolFallback"}


def test_a_model_switch_ignores_the_other_models_token_count():
    messages = tool_run(3)

    fitted = fit(messages, window=128000, model_switched=True, last_input_tokens=500000)

    assert fitted.stages == ["RawToolFallback", "CheckThreshold"]


def test_stage_names_come_back_in_the_order_they_were_applied():
    messages = chat_run(10) + tool_run(12)[2:]
    window = int(transcript_tokens(messages) / 0.8 * 0.5)

    fitted = fit(messages, window=window, model_switched=True)

    assert fitted.stages == ["RawToolFallback", "CheckThreshold", "ExtractContextHistories"]
    messages = chat_run(4) + tool_run(20)[2:]
    fitted = fit(messages, window=int(transcript_tokens(messages) / 0.8 * 0.55))
    assert fitted.stages == ["CheckThreshold", "ExtractContextHistories", "ToolHistory"]
    # Still over once every old step is a stub: a second round folds the stubs into the summary.
    fitted = fit(messages, window=int(transcript_tokens(messages) / 0.8 * 0.2))
    assert fitted.stages == [
        "CheckThreshold",
        "ExtractContextHistories",
        "ToolHistory",
        "ExtractContextHistories",
    ]


def test_a_300_call_tool_heavy_run_stays_under_budget_and_stops_growing():
    rng = random.Random(300)
    seed = seed_messages()
    messages = list(seed)
    raw = transcript_tokens(seed)
    after_compaction: list[int] = []
    compactions_per_hundred = [0, 0, 0]
    evicted_results: set[str] = set()
    for n in range(300):
        name = rng.choice(["read_file", "grep", "run_tests"])
        latest = step(f"call_{n}", name, {"arg": n % 17}, prose(rng, rng.randint(60, 500)))
        messages = messages + latest
        raw += transcript_tokens(latest) - 3

        fitted = fit(messages, window=16000, stored=True)

        messages = fitted.messages
        assert fitted.tokens == transcript_tokens(messages) <= fitted.budget == 12800
        assert fitted.over_budget is False
        assert messages[:2] == seed and messages[-2:] == latest
        assert_paired(messages)
        evicted_results |= {e.message["tool_call_id"] for e in fitted.evicted if e.message["role"] == "tool"}
        if fitted.stages != ["CheckThreshold"]:
            after_compaction.append(fitted.tokens)
            compactions_per_hundred[n // 100] += 1

    # The raw run is over seven budgets long; the fitted one never passes the budget, and what a compaction
    # carries forward (summary, stubs, recent steps) does not grow with the number of calls: every
    # compaction, the 1st or the 25th, lands under the same refill target.
    assert raw > 7 * 12800
    assert max(after_compaction) <= int(12800 * inrun.REFILL_FRACTION)
    assert compactions_per_hundred == [6, 10, 9]
    # Every tool result that left the transcript was reported for the context tier, once.
    still_here = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    assert evicted_results | still_here == {f"call_{n}" for n in range(300)}
    assert not evicted_results & still_here


NAMES = ["read_file", "grep", "run_tests", "edit_file", "write_todo"]


def random_transcript(rng: random.Random) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, 2)):
        messages.append({"role": "system", "content": prose(rng, rng.randint(3, 30))})
    if rng.random() < 0.85:
        messages.append({"role": "user", "content": prose(rng, rng.randint(3, 40))})
    calls = 0
    for _ in range(rng.randint(0, 30)):
        roll = rng.random()
        if roll < 0.2:
            messages.append({"role": "user", "content": prose(rng, rng.randint(1, 120))})
        elif roll < 0.4:
            content: object = prose(rng, rng.randint(1, 120))
            if rng.random() < 0.2:
                content = [{"type": "text", "text": content}]
            messages.append({"role": "assistant", "content": content})
        elif roll < 0.45:
            messages.append({"role": "system", "content": prose(rng, rng.randint(1, 20))})
        else:
            ids = [f"c{calls + k}" for k in range(rng.randint(1, 3))]
            calls += len(ids)
            said = prose(rng, rng.randint(1, 20)) if rng.random() < 0.3 else None
            messages.append(
                {
                    "role": "assistant",
                    "content": said,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {
                                "name": rng.choice(NAMES),
                                "arguments": json.dumps({"path": f"f{rng.randint(0, 4)}.py"}),
                            },
                        }
                        for cid in ids
                    ],
                }
            )
            for cid in rng.sample(ids, len(ids)):
                result = prose(rng, rng.randint(0, 300))
                if rng.random() < 0.15:
                    result = "Error: " + result
                messages.append({"role": "tool", "tool_call_id": cid, "content": result})
    return messages or [{"role": "user", "content": "hi"}]


def seed_and_latest(messages: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """How many leading messages are the seed, and the latest step (empty if all is seed)."""
    n = 0
    while n < len(messages) and messages[n]["role"] == "system":
        n += 1
    if n < len(messages) and messages[n]["role"] == "user":
        n += 1
    if n == len(messages):
        return n, []
    start = len(messages) - 1
    while messages[start]["role"] == "tool":
        start -= 1
    return n, messages[start:]


def test_property_random_transcripts_keep_pairs_the_seed_and_the_latest_step():
    rng = random.Random(20261130)
    for case in range(300):
        messages = random_transcript(rng)
        seed_count, latest = seed_and_latest(messages)
        switched = rng.random() < 0.2
        overflow = Overflow(used=rng.choice([None, rng.randint(100, 20000)])) if rng.random() < 0.35 else None
        last = rng.choice([None, None, rng.randint(0, 20000)])
        window = rng.choice([200, 600, 1500, 4000, 128000])
        stored = rng.random() < 0.5
        seen: list[str] = []

        def after_stage(
            stage: str,
            now: list[dict[str, Any]],
            seen: list[str] = seen,
            seed: list[Any] = messages[:seed_count],
        ) -> None:
            seen.append(stage)
            assert_paired(now)
            assert now[: len(seed)] == seed, stage

        fitted = fit(
            messages,
            window=window,
            last_input_tokens=last,
            overflow=overflow,
            model_switched=switched,
            stored=stored,
            on_stage=after_stage,
        )

        assert seen == fitted.stages, case
        assert_paired(fitted.messages)
        assert fitted.messages[:seed_count] == messages[:seed_count], case
        tail = fitted.messages[len(fitted.messages) - len(latest) :] if latest else []
        if not latest or not switched or not latest[0].get("tool_calls"):
            assert tail == latest, case
        else:
            text = "\n".join(str(m["content"]) for m in fitted.messages[-2:])
            assert all(str(m["content"] or "") in text for m in latest), case
        # Every input message that is gone or rewritten was reported, once, for the context tier.
        kept = {id(m) for m in fitted.messages}
        gone = [i for i, m in enumerate(messages) if id(m) not in kept]
        assert [e.index for e in fitted.evicted] == gone, case
        # The same input fits the same way: the stages are deterministic.
        assert (
            fit(
                messages,
                window=window,
                last_input_tokens=last,
                overflow=overflow,
                model_switched=switched,
                stored=stored,
            ).messages
            == fitted.messages
        )
