"""eval_memory end to end on a real (shortened) LoCoMo conversation, in a subprocess like a user runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memory.evaluation import locomo
from tests.memory.evaluation.conftest import run_manage

# The harness is tested, not the database: recall on PostgreSQL has its own tests (tests/memory).
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return run_manage("eval_memory", *args, tmp_path=tmp_path)


def test_eval_memory_prints_a_table_whose_totals_match(small_conversation, tmp_path):
    out = tmp_path / "figures.json"
    done = run(
        "--data",
        str(small_conversation),
        "--x-budget",
        "200",
        "--y-budget",
        "400",
        "--max-tokens",
        "2600",
        "--json",
        str(out),
        tmp_path=tmp_path,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(out.read_text())
    expected = len(locomo.load(json.loads(small_conversation.read_text()))[0].questions)
    rows = {
        line.split()[0]: line.split()
        for line in done.stdout.splitlines()
        if line.split() and line.split()[0] in (*locomo.CATEGORIES.values(), "overall")
    }
    assert figures["n"] == expected > 10
    # LoCoMo's four categories only: the work sessions' 6–8 get rows when some question is of them.
    assert int(rows["overall"][1]) == expected == sum(int(rows[c][1]) for c in figures["categories"])
    assert rows["overall"][2] == "100.0%"  # every evidence turn reached the store
    assert float(rows["overall"][3].rstrip("%")) == figures["overall"]["strict"]
    assert figures["generations"] > 0
    assert figures["budgets"] == {"x": 200, "y": 400, "max_tokens": 2600}
    assert 0 < figures["overall"]["tokens_mean"] <= 2600
    assert set(figures["categories"]) == {"single-hop", "multi-hop", "temporal", "open-domain"}


def test_eval_memory_over_the_api_scores_what_the_services_path_scores(small_conversation, tmp_path):
    figures = {}
    for path, extra in (("services", ()), ("api", ("--via-api",))):
        out = tmp_path / f"{path}.json"
        done = run(
            "--data",
            str(small_conversation),
            "--x-budget",
            "200",
            "--y-budget",
            "400",
            "--max-tokens",
            "200",
            "--json",
            str(out),
            *extra,
            tmp_path=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        figures[path] = json.loads(out.read_text())

    services, api = figures["services"], figures["api"]
    assert (services["via"], api["via"]) == ("services", "api")
    assert api["n"] == services["n"] > 10
    assert api["generations"] > 0
    assert api["overall"]["store"] == 100.0
    # A small recall budget, so that the figure has room to differ (at 2,600 tokens both are 100 %).
    assert services["overall"]["strict"] < 100.0
    assert abs(api["overall"]["strict"] - services["overall"]["strict"]) <= 0.5
    assert abs(api["overall"]["per_turn"] - services["overall"]["per_turn"]) <= 0.5


def test_eval_memory_refuses_to_score_when_no_compaction_fired(small_conversation, tmp_path):
    done = run("--data", str(small_conversation), tmp_path=tmp_path)

    assert done.returncode == 1
    assert "no compaction fired at x-budget 24000 / y-budget 80000" in done.stderr
    assert "strict" not in done.stdout


def test_locomo_evidence_ids_are_repaired_and_unknown_ones_dropped():
    data = [
        {
            "sample_id": "t",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1": [
                    {"speaker": "A", "dia_id": "D1:1", "text": "hi"},
                    {"speaker": "B", "dia_id": "D1:2", "text": "yo", "blip_caption": "a dog"},
                ],
                "session_1_date_time": "1 May 2023",
                "session_11_date_time": "no such session",
            },
            "qa": [
                {"question": "q1", "answer": "x", "evidence": ["D1:1; D1:2"], "category": 1},
                {"question": "q2", "answer": "x", "evidence": ["D:1:2", "D9:9"], "category": 4},
                {"question": "q3", "answer": "x", "evidence": ["D"], "category": 2},
                {"question": "q4", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
            ],
        }
    ]
    conv = locomo.load(data)[0]

    assert [(q.question, q.evidence) for q in conv.questions] == [("q1", ("D1:1", "D1:2")), ("q2", ("D1:2",))]
    assert conv.dropped_evidence == ["D9:9", "D"]
    assert conv.turns[1].text == "yo [shares a photo: a dog]"
    assert conv.turns[1].occurred_at is None  # "1 May 2023" is not LoCoMo's form: appended as now


def test_leave_two_out_scores_every_pair_of_held_out_conversations():
    outcomes = [
        locomo.Outcome(
            conversation=c, category=cat, stored=True, strict=ok, per_turn=1.0, tokens=1, latency_ms=1.0
        )
        for c, cat, ok in [
            ("a", 1, True),
            ("a", 4, True),
            ("b", 1, False),
            ("b", 4, True),
            ("c", 1, False),
            ("c", 4, False),
        ]
    ]

    held = locomo.leave_two_out(outcomes)

    assert held["pairs"] == [["a", "b"], ["a", "c"], ["b", "c"]]
    assert held["overall"]["per_pair"] == [75.0, 50.0, 25.0]
    assert held["overall"]["mean"] == 50.0 and (held["overall"]["min"], held["overall"]["max"]) == (
        25.0,
        75.0,
    )
    assert held["multi-hop"]["per_pair"] == [50.0, 50.0, 0.0]
    assert locomo.leave_two_out(outcomes[:4]) is None  # two conversations: no 3/2 split
