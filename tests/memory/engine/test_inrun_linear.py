"""Every parser of agent text in the in-run stages runs in time linear in its input (issue 26).

Each parser is fed adversarial strings of 10^3, 10^4 and 10^5 characters (the shapes that made
regular expressions with overlapping quantifiers backtrack: runs of digits, digit groups, letters,
path-like and dotted runs, separators, unclosed quotes and brackets, a mix). The check is a ratio of
times, never a wall-clock figure: ten times the input may take at most GROWTH times as long (linear
is about 10, quadratic 100). Sizes are tried in order and a case stops at its first ratio over the
bound, so a quadratic parser fails at 10^4 characters, in seconds, instead of running for minutes at
10^5. No database: the engine alone.
"""

from __future__ import annotations

import gc
import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from memory.engine.inrun import (
    Overflow,
    StepView,
    ToolCallView,
    Verdict,
    failed_tool_result,
    fit,
    heuristic_still_needed,
    is_write_todo,
    judge,
    normalize_model,
    overflow,
    parse_overflow,
)
from memory.engine.inrun.judge import heuristic_verdicts

SIZES = (1_000, 10_000, 100_000)
GROWTH = 30
# Below this a time is noise (the timer, caches, a shared machine's scheduling): it counts as this.
FLOOR = 0.002


def repeat(unit: str) -> Callable[[int], str]:
    return lambda n: (unit * (n // len(unit) + 1))[:n]


def mixed(n: int) -> str:
    rng = random.Random(26)
    return "".join(rng.choice('a1/._- ,:~"[{(\n') for _ in range(n))


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "digits": repeat("1"),
    "digit groups": repeat("1,000,"),
    "digit groups with blanks": repeat("000 "),
    "a number then blanks": lambda n: "1" + " " * (n - 1),
    "letters": repeat("a"),
    "path-like": repeat("a/"),
    "dots": repeat("a."),
    "separators": repeat("-_~."),
    "an unclosed quote": lambda n: ('{"path": "' + "a" * n)[:n],
    "unclosed brackets": repeat("[{("),
    "provider phrases": repeat("context window of maximum context length is 1 tokens > "),
    "mixed": mixed,
}


def call_step(cid: str, name: str, arguments: str, result: str) -> list[dict[str, Any]]:
    call = {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


# Enough earlier conversation that every fit runs its stages at every size (the window is small).
PADDING = [
    {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n}: " + "we looked at the logs. " * 20}
    for n in range(12)
]


def carrying(text: str) -> list[dict[str, Any]]:
    """A run with `text` as a user message, a tool call's arguments, a tool result, and an error."""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the login test."},
        *PADDING,
        {"role": "user", "content": text},
        *call_step("c1", "read_file", text, text),
        *call_step("c2", "edit_file", text, "ok"),
        *call_step("c3", "read_file", '{"path": "a.py"}', "Error: " + text),
        *call_step("c4", "run_tests", "{}", "3 passed"),
    ]


def view(position: int, name: str, arguments: str, result: str) -> StepView:
    return StepView(position, (ToolCallView(f"c{position}", name, arguments),), (result,), "")


def judge_arguments(text: str) -> None:
    later = [view(1, "edit_file", text, "ok"), view(2, "read_file", text + "b", "ok")]
    heuristic_still_needed(view(0, "read_file", text, "ok"), later, text)


def judge_result(text: str) -> None:
    heuristic_still_needed(view(0, "grep", "{}", text), [view(1, "read_file", text, "ok")], text)


def model_name(text: str) -> None:
    try:
        normalize_model(text)
    except ValueError:
        pass


def overflow_patterns(text: str) -> None:
    # Each pattern on the whole text: linear by itself, not only thanks to the cap on what is read.
    for pattern, _, _ in overflow._OVERFLOW_PATTERNS:
        pattern.search(text)
    for used in overflow._USED_PATTERNS:
        used.search(text)


PARSERS: dict[str, Callable[[str], object]] = {
    "parse_overflow": parse_overflow,
    "the overflow patterns, whole text": overflow_patterns,
    "the path finder, whole text": judge._PATH.findall,
    "the distinct-word finder, whole text": judge._DISTINCT.findall,
    "the judge, on arguments": judge_arguments,
    "the judge, on a result": judge_result,
    "failed_tool_result": lambda text: failed_tool_result(carrying(text)[:-2]),
    "normalize_model": model_name,
    "is_write_todo": is_write_todo,
    "fit": lambda text: fit(carrying(text), window=2048),
    "fit after a context-length error": lambda text: fit(
        carrying(text), window=2048, overflow=parse_overflow(text)
    ),
    "fit after a model switch": lambda text: fit(carrying(text), window=2048, model_switched=True),
}


def elapsed(run: Callable[[Any], object], text: Any, tries: int) -> float:
    """The best of up to `tries` runs (fewer when they are long): the least disturbed by others.

    Stopping after 5 s keeps a quadratic parser's worst case short (it takes seconds a run at
    100,000 characters) and still fails it."""
    gc.collect()
    best, spent = float("inf"), 0.0
    for _ in range(tries):
        start = time.perf_counter()
        run(text)
        took = time.perf_counter() - start
        best, spent = min(best, took), spent + took
        if spent > 5.0:
            break
    return best


def growth_of(run: Callable[[Any], object], smaller: Any, larger: Any) -> tuple[float, float, float]:
    """How much longer `larger` takes than `smaller`. The smaller input (a tenth of the cost) is
    timed as the best of three, so a stall there cannot hide growth; the larger once, and again as
    the best of three only when the ratio reads over the bound: a stall there only makes a ratio
    worse (one run of a linear parser on 100,000 characters once took 1.1 s instead of ≈ 0.17 s in
    the full suite, ×63 from a single sample)."""
    before = elapsed(run, smaller, tries=3)
    for tries in (1, 3):
        after = elapsed(run, larger, tries)
        growth = max(after, FLOOR) / max(before, FLOOR)
        if growth <= GROWTH:
            break
    return growth, before, after


@pytest.mark.parametrize("shape", ADVERSARIAL)
@pytest.mark.parametrize("parser", PARSERS)
def test_parser_time_grows_at_most_linearly_with_adversarial_input(parser, shape):
    run, make = PARSERS[parser], ADVERSARIAL[shape]
    for smaller, larger in zip(SIZES, SIZES[1:], strict=False):
        growth, before, after = growth_of(run, make(smaller), make(larger))
        shown = f"{smaller:,} chars {before * 1000:.1f} ms, {larger:,} chars {after * 1000:.1f} ms"
        assert growth <= GROWTH, f"{parser} on {shape}: ×{growth:.0f} for ×10 input ({shown})"


def steps_run(steps: int) -> list[dict[str, Any]]:
    """A long run of reads and edits of a few files, each result full of distinctive words."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the login test."},
    ]
    for n in range(steps):
        name = ("read_file", "edit_file", "grep")[n % 3]
        arguments = json.dumps({"path": f"src/module_{n % 7}.py", "n": n})
        result = " ".join(f"identifier_{n}_{k}" for k in range(60))
        messages += call_step(f"c{n}", name, arguments, result)
    return messages


def test_a_fit_after_an_error_grows_linearly_with_the_number_of_steps():
    # The judge saw every later step for each step, and each drop re-listed the units: quadratic.
    def fitted(messages: list[dict[str, Any]]) -> object:
        return fit(messages, window=2048, overflow=Overflow())

    growth, before, after = growth_of(fitted, steps_run(60), steps_run(600))

    assert growth <= GROWTH, (before, after)


def test_the_one_pass_judge_agrees_with_judging_each_step_against_the_later_ones():
    rng = random.Random(7)
    files = ["src/a.py", "src/b.py", "config/settings_prod.yaml"]
    for _ in range(100):
        views = []
        for n in range(rng.randint(1, 12)):
            name = rng.choice(["read_file", "edit_file", "run_tests", "grep"])
            arguments = rng.choice(
                [json.dumps({"path": rng.choice(files)}), "{}", "not json " + rng.choice(files)]
            )
            result = rng.choice(["ok", "Error: failed", f"see {rng.choice(files)}:12", "identifier_value"])
            views.append(view(n, name, arguments, result))
        request = rng.choice(["", "look at config/settings_prod.yaml", "identifier_value please"])

        assert heuristic_verdicts(views, request) == [
            heuristic_still_needed(step, views[n + 1 :], request) for n, step in enumerate(views)
        ]


def test_a_read_with_arguments_past_the_scan_is_never_said_to_be_rewritten():
    # Its paths past the first ARGUMENT_SCAN_CHARS characters were not read: one may not be rewritten.
    padding = "x" * judge.ARGUMENT_SCAN_CHARS
    read = view(0, "read_file", json.dumps({"path": "a.py", "pad": padding, "also": "b.py"}), "…")
    short = view(0, "read_file", json.dumps({"path": "a.py"}), "…")
    edit = view(1, "edit_file", json.dumps({"path": "a.py"}), "ok")

    assert heuristic_still_needed(read, [edit], "") == Verdict(True, 0.55, "no sign it was superseded")
    assert heuristic_still_needed(short, [edit], "") == Verdict(
        False, 0.75, "it read files a later step rewrote"
    )


def test_arguments_nested_past_the_json_parser_are_compared_as_text():
    deep = "[" * 100_000

    assert heuristic_still_needed(view(0, "f", deep, "x"), [view(1, "f", deep, "y")], "") == Verdict(
        False, 0.9, "the same call was made again later"
    )


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is " + "9" * 5_000 + " tokens",
        "context window of " + "1" * 13,
        "context window of 1,000,000,000,000,000 tokens",
        "prompt is too long: " + "2" * 4_400 + " tokens > " + "1" * 4_400 + " maximum",
    ],
)
def test_a_number_of_more_than_twelve_digits_is_not_a_window(message):
    assert parse_overflow(message) == Overflow()


def test_numbers_in_groups_are_still_read():
    assert parse_overflow("the context window of 1,048,576 tokens; 2 000 000 in the messages") == Overflow(
        limit=1_048_576, used=2_000_000
    )


def test_only_the_start_of_an_error_message_is_read():
    said = "maximum context length is 8192 tokens"

    assert parse_overflow(said + " " * overflow.SCAN_CHARS) == Overflow(limit=8192)
    assert parse_overflow(" " * overflow.SCAN_CHARS + said) == Overflow()
