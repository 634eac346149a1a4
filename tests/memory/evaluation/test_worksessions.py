"""The agent work sessions (memory/evaluation/worksessions.py): the set's promises, and that
LoCoMo still loads as it did before the format grew roles, names, per-turn times and categories."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from memory.evaluation import locomo, worksessions
from tests.memory.evaluation.conftest import DEV


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    return worksessions.build("all")


@pytest.fixture(scope="module")
def loaded(everything) -> list[locomo.Conversation]:
    return locomo.load(everything)


def normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w#./@-]+", " ", text.lower()).split())


def test_the_same_sessions_on_every_run(everything):
    again = worksessions.build("all")
    assert json.dumps(again, sort_keys=True) == json.dumps(everything, sort_keys=True)


def test_at_least_twenty_sessions_of_300_to_1000_turns(loaded):
    assert len(loaded) >= 20
    for conv in loaded:
        assert 300 <= len(conv.turns) <= 1000, (conv.sample_id, len(conv.turns))


def test_at_least_300_questions_of_every_kind(everything, loaded):
    counts = Counter(q.category for conv in loaded for q in conv.questions)
    assert sum(counts.values()) >= 300
    # Every category asked for by the issue, each with a fair number of questions.
    assert {1, 2, 4, 6, 7, 8} <= set(counts)
    assert min(counts[n] for n in (1, 2, 4, 6, 7, 8)) >= 20
    # No evidence is dropped and no question lost on loading.
    assert sum(len(s["qa"]) for s in everything) == sum(counts.values())
    assert all(not conv.dropped_evidence for conv in loaded)


def test_every_evidence_id_names_a_turn(everything):
    for sample in everything:
        ids = {
            t["dia_id"]
            for k, v in sample["conversation"].items()
            if k.startswith("session_") and isinstance(v, list)
            for t in v
        }
        for qa in sample["qa"]:
            assert qa["evidence"] and set(qa["evidence"]) <= ids, (sample["sample_id"], qa)


def test_every_answer_is_in_its_evidence(loaded):
    """A temporal answer is the evidence turn's day; a multi-hop answer's parts ("; ") are each in one
    of its turns, and it has two turns or more (a plan and its outcome, an owner and their review…);
    any other answer is in an evidence turn's text."""
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            turns = [by_id[e] for e in q.evidence]
            if q.category == 2:
                assert any(normalise(q.answer) == normalise(t.date.split(" on ")[1]) for t in turns), q
                continue
            texts = [normalise(t.text) for t in turns]
            parts = q.answer.split("; ") if q.category == 1 else [q.answer]
            for part in parts:
                assert any(normalise(part) in text for text in texts), (conv.sample_id, q, part)
            if q.category == 1:
                assert len(turns) >= 2


def test_the_holdout_is_every_third_session_and_shares_none_with_dev():
    dev, holdout = worksessions.build("dev"), worksessions.build("holdout")
    dev_ids, holdout_ids = {s["sample_id"] for s in dev}, {s["sample_id"] for s in holdout}
    assert not dev_ids & holdout_ids
    assert holdout_ids == {f"work-{n:02d}" for n in range(3, worksessions.SESSIONS + 1, 3)}
    assert len(holdout) * 3 == worksessions.SESSIONS
    # Nor any turn: a holdout session is not a copy of a dev one under another name.
    dev_texts = {json.dumps(s["conversation"], sort_keys=True) for s in dev}
    assert all(json.dumps(s["conversation"], sort_keys=True) not in dev_texts for s in holdout)


def test_the_extra_split_is_new_sessions_of_the_same_kind_after_the_set(everything):
    extra = worksessions.build("extra")
    assert [s["sample_id"] for s in extra] == [f"work-{n:02d}" for n in range(22, 22 + worksessions.EXTRA)]
    # New conversations, not the set's under other numbers; each keeps the set's promises.
    known = {json.dumps(s["conversation"], sort_keys=True) for s in everything}
    assert all(json.dumps(s["conversation"], sort_keys=True) not in known for s in extra)
    for conv in locomo.load(extra):
        assert 300 <= len(conv.turns) <= 1000
        assert conv.questions and all(q.evidence for q in conv.questions) and not conv.dropped_evidence
    assert json.dumps(extra) == json.dumps(worksessions.build("extra"))  # seeded: the same every run


def test_turns_carry_roles_names_and_times_and_tools_print_long_outputs(loaded):
    roles = Counter(t.role for conv in loaded for t in conv.turns)
    assert set(roles) == {"user", "assistant", "tool"}
    long_tool_outputs = [t for conv in loaded for t in conv.turns if t.role == "tool" and len(t.text) >= 400]
    assert len(long_tool_outputs) >= 20 * 20
    assert any("Traceback (most recent call last)" in t.text for t in long_tool_outputs)
    for conv in loaded:
        assert all(t.name and t.occurred_at is not None for t in conv.turns)
        times = [t.occurred_at for t in conv.turns]
        assert times == sorted(times)
        assert {locomo.role_of(conv, t) for t in conv.turns} == {"user", "assistant", "tool"}


def test_facts_are_a_small_part_of_each_session(loaded):
    for conv in loaded:
        evidence = {e for q in conv.questions for e in q.evidence}
        assert len(evidence) <= 0.1 * len(conv.turns)


def test_sessions_differ_in_domain_people_and_numbers(everything):
    assert len({s["domain"] for s in everything}) >= 6
    assert len({s["conversation"]["speaker_a"] for s in everything}) >= 10
    answers = Counter(q["answer"] for s in everything for q in s["qa"])
    assert answers.most_common(1)[0][1] <= 6


def test_locomo_loads_as_before():
    """The dev file's scored questions per category, as `locomo.load` counted them before roles,
    names, per-turn times and categories 6–8 were added (computed at commit 9f13630)."""
    conversations = locomo.load(json.loads(DEV.read_text()))
    counts = Counter(q.category for conv in conversations for q in conv.questions)
    assert dict(counts) == {1: 142, 2: 156, 3: 44, 4: 418}
    assert sum(len(c.turns) for c in conversations) == 2760
    assert sum(len(c.dropped_evidence) for c in conversations) == 2
    for conv in conversations:
        assert {locomo.role_of(conv, t) for t in conv.turns} == {"user", "assistant"}
        assert all(locomo.name_of(t) == t.speaker and not t.role for t in conv.turns)
    outcomes = [
        locomo.Outcome(c.sample_id, q.category, True, True, 1.0, 10, 1.0)
        for c in conversations
        for q in c.questions
    ]
    assert list(locomo.report(outcomes)["categories"]) == [
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    ]


def test_the_report_has_rows_for_the_new_categories_when_asked(loaded):
    outcomes = [
        locomo.Outcome(c.sample_id, q.category, True, q.category != 6, 1.0, 10, 1.0)
        for c in loaded[:3]
        for q in c.questions
    ]
    figures = locomo.report(outcomes)
    figures["leave_two_out"] = locomo.leave_two_out(outcomes)
    assert set(figures["categories"]) == {
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
        "paraphrase",
        "first-person",
        "decision",
    }
    assert figures["categories"]["paraphrase"]["strict"] == 0.0
    assert figures["categories"]["decision"]["strict"] == 100.0
    printed = locomo.table(figures)
    rows = {line.split()[0]: line.split() for line in printed.split("\n\n")[0].splitlines() if line.split()}
    assert int(rows["overall"][1]) == sum(int(rows[name][1]) for name in figures["categories"])
    assert figures["leave_two_out"]["first-person"]["mean"] == 100.0


def test_the_command_writes_the_split(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "holdout.json"
    call_command("worksessions", "--split", "holdout", "--out", str(out))
    written = json.loads(out.read_text())
    assert [s["sample_id"] for s in written] == [f"work-{n:02d}" for n in range(3, 22, 3)]
    assert written == json.loads(json.dumps(worksessions.build("holdout")))
