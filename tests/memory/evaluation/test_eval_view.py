"""eval_view: its scoring on hand-made turns, and the command end to end on a shortened real LoCoMo
conversation, over the public API as a user runs it."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.evaluation import locomo
from memory.evaluation import view as ev
from tests.memory.evaluation.conftest import run_manage

# The harness is tested, not the database: the view on PostgreSQL has its own tests (tests/memory).
pytestmark = pytest.mark.sqlite_pass


def conversation() -> locomo.Conversation:
    date = "1:56 pm on 8 May, 2023"
    turns = [
        locomo.LocomoTurn("D1:1", "Caroline", "I adopted a grey cat, her name is Miso.", 1, date),
        locomo.LocomoTurn("D1:2", "Melanie", "Lovely! I ran a charity race on Sunday.", 1, date),
        locomo.LocomoTurn("D2:1", "Caroline", "We moved to Lisbon last week.", 2, "9:00 am on 9 June, 2023"),
    ]
    questions = [
        locomo.Question("What is the cat called?", 4, ("D1:1",), "Miso"),
        locomo.Question("Where did Caroline move?", 4, ("D2:1",), "Lisbon!"),
        locomo.Question("When did they talk first?", 2, ("D1:1",), "8 May 2023"),
        locomo.Question("What did Melanie bake?", 4, ("D1:2",), "a cake"),  # never said
    ]
    return locomo.Conversation("conv-x", ("Caroline", "Melanie"), turns, questions)


def test_an_answer_is_found_on_word_boundaries_whatever_its_case_and_punctuation():
    text = ev.normalise("user (Caroline · 8 May 2023): We moved to LISBON, finally.")

    assert ev.contains(text, "Lisbon!") and ev.contains(text, "8 may 2023")
    assert not ev.contains(text, "Lis") and not ev.contains(text, "May 20") and not ev.contains(text, "...")


def test_only_questions_whose_answer_was_said_are_scored_and_the_day_counts_as_said():
    conv = conversation()

    assert [p.answer for p in ev.probes(conv, conv.turns)] == ["Miso", "Lisbon!", "8 May 2023"]
    assert [p.answer for p in ev.probes(conv, conv.turns[:2])] == ["Miso", "8 May 2023"]


def test_the_baselines_are_the_newest_turns_that_fit_rendered_as_the_view_renders_them():
    conv = conversation()
    reading = ev.Reading("conv-x", 2, "- 8 May 2023 · Caroline: her name is Miso", 10, {})

    outcomes, texts = ev.score(conv, reading, x_budget=10, y_budget=1)

    assert texts["recent_same_size"] == "user (Caroline · 9 June 2023): We moved to Lisbon last week."
    assert texts["recent_whole_budget"] == texts["recent_same_size"]
    assert [(o.answer, o.found) for o in outcomes] == [
        ("Miso", {"view": True, "recent_same_size": False, "recent_whole_budget": False}),
        ("Lisbon!", {"view": False, "recent_same_size": True, "recent_whole_budget": True}),
        ("8 May 2023", {"view": True, "recent_same_size": False, "recent_whole_budget": False}),
    ]
    assert conv.turns[0].occurred_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run_manage("eval_view", *args, tmp_path=tmp_path)


@pytest.mark.slow
def test_eval_view_over_the_api_reads_the_view_after_every_sitting_and_scores_it(
    small_conversation, tmp_path
):  # noqa: F811
    out = tmp_path / "view.json"

    done = run(
        "--data",
        str(small_conversation),
        "--x-budget",
        "200",
        "--y-budget",
        "400",
        "--each-sitting",
        "--json",
        str(out),
        tmp_path=tmp_path,
    )

    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert (figures["via"], figures["each_sitting"], figures["budgets"]) == (
        "api",
        True,
        {"x": 200, "y": 400},
    )
    # Three sittings, three readings; every view within X + Y and no raw turn held back.
    assert figures["view_tokens"]["max"] <= 600
    lines = done.stdout.splitlines()
    assert any(line.startswith("overall ") for line in lines)
    assert "the view read after every sitting (3 readings)" in done.stdout
    assert figures["n"] > 0 and 0 <= figures["overall"]["view"] <= 100
