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


def test_ahead_of_judges_the_evidences_best_hit_against_every_other_turn():
    # Hits best first; evidence 7 (and 8), other people's similar turns 3 and 4.
    assert locomo.ahead_of([7, 3, 4], [7], [3, 4]) == (True, True)
    assert locomo.ahead_of([5, 7, 3], [7], [3, 4]) == (True, False)
    assert locomo.ahead_of([4, 7, 3], [7], [3, 4]) == (False, False)  # one of the others ahead
    assert locomo.ahead_of([3, 8, 7], [7, 8], [3]) == (False, False)
    assert locomo.ahead_of([5, 8, 3, 7], [7, 8], [3]) == (True, False)  # the best of the evidence
    assert locomo.ahead_of([7], [7], [3, 4]) == (True, True)  # the others not returned: behind
    assert locomo.ahead_of([3, 4], [7], [3, 4]) == (False, False)  # the evidence not returned
    assert locomo.ahead_of([5], [7], [3]) == (False, False)  # neither returned: not ahead


def test_distractors_are_read_beside_the_evidence_and_unknown_ones_left_out():
    turns = [{"speaker": p, "dia_id": f"D1:{n}", "text": f"ask {n}"} for n, p in enumerate("ABCA", start=1)]
    data = [
        {
            "sample_id": "t",
            "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1": turns},
            "qa": [
                {
                    "question": "What did A ask?",
                    "evidence": ["D1:1"],
                    "distractors": ["D1:2", "D1:3"],
                    "category": 12,
                },
                {"question": "Who?", "evidence": ["D1:4"], "distractors": ["D1:2", "D9:9"], "category": 11},
                {"question": "What?", "evidence": ["D1:3"], "category": 4},
            ],
        }
    ]

    conv = locomo.load(data)[0]

    assert [q.distractors for q in conv.questions] == [("D1:2", "D1:3"), ("D1:2",), ()]
    assert all(q.superseded == () for q in conv.questions)
    assert conv.dropped_evidence == []  # a distractor naming no turn is not evidence dropped


def test_the_report_gives_the_order_against_distractors_apart_from_strict():
    def outcome(strict: bool, ahead: bool | None, first: bool | None) -> locomo.Outcome:
        return locomo.Outcome("t", 12, True, strict, 1.0, 10, 1.0, others_ahead=ahead, others_first=first)

    outcomes = [outcome(True, True, True), outcome(True, False, False), outcome(False, False, False)]
    outcomes.append(outcome(True, None, None))  # no distractors: not counted

    figures = locomo.report(outcomes)

    assert figures["distractors"] == {"n": 3, "ahead": 33.3, "first": 33.3}
    assert figures["superseded"] is None
    # A distractor ahead does not fail a question: strict is the evidence returned, nothing more.
    assert figures["overall"]["strict"] == 75.0
    assert locomo.report(outcomes[3:])["distractors"] is None


def test_show_items_marks_each_distractor_with_its_place_among_those_returned():
    from memory.management.commands.eval_memory import describe

    q = locomo.Question("What did Dalia ask?", 12, ("D3:12",), distractors=("D2:2", "D2:9"))
    position_of = {"D2:2": 66, "D2:9": 80, "D3:12": 122}
    text_of = {
        "D2:2": "@assistant move\nthe table up",
        "D2:9": "@assistant fix the date",
        "D3:12": "@assistant add a link",
    }

    lines = describe(q, [67, 66, 122, 66], position_of, text_of)

    assert lines == [
        "[attributed] What did Dalia ask?",
        "  #3 D3:12: @assistant add a link",
        "  other #2 D2:2: @assistant move the table up",
        "  other - D2:9: @assistant fix the date",
    ]


def test_eval_memory_reports_the_order_against_distractors_without_failing_strict(
    small_conversation, tmp_path
):
    """Each question is given the other turns of its evidence's sitting as distractors, and scored on
    the store the unlabelled run kept: the run prints and writes how often its own evidence came
    ahead, lists those behind as failures (`other #1`), and strict is what the unlabelled run scored."""
    data = json.loads(small_conversation.read_text())
    conversation, qa = data[0]["conversation"], data[0]["qa"]
    for q in qa:
        sitting = conversation[f"session_{q['evidence'][0].split(':')[0][1:]}"]
        q["distractors"] = [t["dia_id"] for t in sitting if t["dia_id"] not in q["evidence"]]
    labelled = sum(bool(q.get("distractors")) for q in qa if q["category"] in locomo.CATEGORIES)
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(data))
    figures, printed = {}, {}
    for name, source in (("plain", small_conversation), ("labelled", path)):
        out = tmp_path / f"{name}.json"
        done = run(
            *("--data", str(source), "--x-budget", "200", "--y-budget", "400", "--max-tokens", "600"),
            *("--show-items", "failures", "--json", str(out), "--keep-store", str(tmp_path / "store")),
            tmp_path=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        figures[name], printed[name] = json.loads(out.read_text()), done.stdout

    plain, d = figures["plain"], figures["labelled"]["distractors"]
    assert plain["distractors"] is None and "other people's similar turns" not in printed["plain"]
    assert d["n"] == labelled > 5 and figures["labelled"]["superseded"] is None
    assert d["ahead"] < 100.0  # some hit of the sitting came first: something for strict to ignore
    assert f"the evidence came before every one of them in {d['ahead']}% of {d['n']}" in printed["labelled"]
    assert "not counted in strict" in printed["labelled"]
    # A distractor ahead fails nothing: strict and per-turn are the unlabelled run's.
    for name, f in (("overall", plain["overall"]), *plain["categories"].items()):
        again = figures["labelled"]["categories"].get(name, figures["labelled"]["overall"])
        assert (again["strict"], again["per_turn"]) == (f["strict"], f["per_turn"]), name
    # Every question whose evidence came behind a distractor is listed, its distractors marked (a
    # question's lines follow an empty line, the first one's too).
    blocks = [b for b in ("\n" + printed["labelled"]).split("\n\n") if b.startswith("[")]
    listed = [b for b in blocks if "\n  other " in b]
    assert len(listed) >= round(d["n"] * (100 - d["ahead"]) / 100)
    missed = {b.splitlines()[0] for b in ("\n" + printed["plain"]).split("\n\n") if b.startswith("[")}
    assert missed <= {b.splitlines()[0] for b in blocks}
    assert all("\n  other " in b for b in blocks if b.splitlines()[0] not in missed)
