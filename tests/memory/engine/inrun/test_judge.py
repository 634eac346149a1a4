"""The heuristic judge of whether a tool step is still needed (memory/engine/inrun/judge.py). No
database."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory.engine.inrun import (
    StepView,
    ToolCallView,
    Verdict,
    heuristic_still_needed,
)


def view(position: int, name: str, arguments: dict[str, Any], result: str) -> StepView:
    return StepView(position, (ToolCallView(f"c{position}", name, json.dumps(arguments)),), (result,), "")


@pytest.mark.parametrize(
    "step_view, later, asked_for, verdict",
    [
        (
            view(0, "read_file", {"path": "a.py"}, "x = 1"),
            [view(1, "read_file", {"path": "a.py"}, "x = 2")],
            "",
            Verdict(False, 0.9, "the same call was made again later"),
        ),
        (
            view(0, "run_tests", {"k": "login"}, "Error: ImportError in conftest"),
            [view(1, "run_tests", {"k": "all"}, "3 passed")],
            "",
            Verdict(False, 0.8, "it failed and the tool was called again later"),
        ),
        (
            view(0, "read_file", {"path": "src/app.py"}, "def main(): pass"),
            [view(1, "edit_file", {"path": "src/app.py", "patch": "…"}, "ok")],
            "",
            Verdict(False, 0.75, "it read files a later step rewrote"),
        ),
        (
            view(0, "grep", {"pattern": "timeout"}, "config/settings_prod.yaml:12 session_timeout: 30"),
            [view(1, "read_file", {"path": "config/settings_prod.yaml"}, "…")],
            "",
            Verdict(True, 0.7, "its output is referred to later"),
        ),
        (
            view(0, "list_dir", {"path": "."}, "a b c"),
            [view(1, "run_tests", {}, "ok")],
            "",
            Verdict(True, 0.55, "no sign it was superseded"),
        ),
    ],
)
def test_heuristic_judge_gives_a_verdict_with_a_confidence(step_view, later, asked_for, verdict):
    assert heuristic_still_needed(step_view, later, asked_for) == verdict
