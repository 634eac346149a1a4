from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.evaluation import compaction as ec
from memory.evaluation.synthetic import conversation, plant_positions

# The engine replayed with no database: once is enough (`make test`, not `make test-postgres`).
pytestmark = pytest.mark.sqlite_pass

ROWS = ["type-blind", "type-blind, tight budget", "protected", "protected, tight budget"]
CELL = re.compile(r"^(?P<label>\S.*?)\s{2,}(?P<cells>\d+/\d+(?:\s+\d+/\d+)*)$")


def printed_rows(text: str) -> dict[str, list[str]]:
    """The table as a reader sees it: {policy: ["k/8", …]}."""
    rows = {}
    for line in text.splitlines():
        match = CELL.match(line.strip())
        if match:
            rows[match["label"]] = match["cells"].split()
    return rows


def run_command(tmp_path, *args: str) -> tuple[str, dict]:
    out = io.StringIO()
    target = tmp_path / "compaction.json"
    call_command("eval_compaction", "--json", str(target), *args, stdout=out)
    return out.getvalue(), json.loads(target.read_text())


def test_eval_compaction_keeps_every_protected_constraint_and_shows_type_blind_losing(tmp_path):
    output, figures = run_command(tmp_path)

    kept = {
        row["policy"]: [row["results"][str(n)]["kept"] for n in figures["lengths"]] for row in figures["rows"]
    }
    assert figures["lengths"] == [120, 400]
    assert list(kept) == ROWS
    assert kept["protected"] == [8, 8]
    assert kept["protected, tight budget"] == [8, 8]
    assert min(kept["type-blind"] + kept["type-blind, tight budget"]) < 8
    assert output.splitlines()[0].split() == ["policy", "120", "turns", "400", "turns"]
    assert printed_rows(output) == {policy: [f"{k}/8" for k in cells] for policy, cells in kept.items()}


def test_eval_compaction_abstract_once_arm_adds_four_rows_with_protection_intact(tmp_path):
    output, figures = run_command(tmp_path, "--abstract-once")

    rows = printed_rows(output)
    assert list(rows) == ROWS + [f"{label}, abstract once" for label in ROWS]
    assert [r["reabstract"] for r in figures["rows"]] == [True] * 4 + [False] * 4
    assert rows["protected, abstract once"] == ["8/8", "8/8"]
    assert rows["protected, tight budget, abstract once"] == ["8/8", "8/8"]


def test_eval_compaction_json_names_what_each_policy_lost(tmp_path):
    _, figures = run_command(tmp_path, "--lengths", "120")

    for row in figures["rows"]:
        result = row["results"]["120"]
        assert sorted(result["survivors"] + result["lost"]) == sorted(ec.CONSTRAINTS)
        assert result["kept"] == len(result["survivors"])
        assert set(result["in_bullets"]) <= set(result["survivors"])
        assert result["generations"] >= 1


def test_eval_compaction_refuses_a_length_too_short_to_plant_every_constraint():
    with pytest.raises(CommandError, match="at least 16 turns"):
        call_command("eval_compaction", "--lengths", "10", stdout=io.StringIO())


def test_synthetic_conversation_plants_each_constraint_once_in_a_person_turn():
    turns = conversation(120, seed=3, constraints=ec.CONSTRAINTS)

    holders = [[(n, role) for n, (role, text) in enumerate(turns) if c in text] for c in ec.CONSTRAINTS]
    assert [len(h) for h in holders] == [1] * 8
    assert {role for h in holders for _, role in h} == {"user"}
    assert [n for h in holders for n, _ in h] == plant_positions(120, 8)
    assert conversation(120, seed=3, constraints=ec.CONSTRAINTS) == turns


def test_replay_counts_a_constraint_only_when_its_sentence_is_verbatim():
    assert ec.surviving(["- never deploy to production on a Friday"]) == []
    assert ec.surviving(["user: Keep this in mind. Never deploy to production  on a Friday. Thanks."]) == [
        "Never deploy to production on a Friday."
    ]


def test_eval_compaction_bounded_rows_keep_every_constraint_in_a_bounded_view(tmp_path):
    output, figures = run_command(tmp_path)

    bounded = {row["policy"]: row["results"] for row in figures["bounded"]}
    tight = bounded["protected, share 0.5, tight budget"]
    assert list(tight) == ["120", "400", "1200"]
    # The person's turns alone are several times Y …
    assert tight["1200"]["person_tokens"] > 5 * 1000
    # … and yet, chatter leaving before instructions, every constraint is verbatim in the view at
    # every length and budget, the view never held more than X + Y + the largest turn, and a
    # keyword recall finds every constraint's turn.
    for results in bounded.values():
        for cell in results.values():
            assert (cell["in_view"], cell["recalled"], cell["not_in_view"]) == (8, 8, [])
            assert cell["peak_view_tokens"] <= cell["bound"]
    assert "protected, share 0.5, tight budget  8/8 · 8/8 (0.9× Y)" in output
    # The seed's table is printed first, unchanged.
    assert printed_rows(output)["protected, tight budget"] == ["8/8", "8/8"]
