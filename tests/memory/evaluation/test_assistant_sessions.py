"""The assistant sessions (memory/evaluation/assistant_sessions.py): the set's promises — size,
categories and their shares, evidence that names turns and holds the answers, roles and names, the
split rule, determinism — and that the command writes a file `locomo.load` reads."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from memory.evaluation import assistant_sessions, generated, locomo

TOOLS = {"calendar", "email_search", "web_search", "notes", "bookings", "maps", "shopping", "weather"}
# The share of questions each category should have, in per cent, give or take SHARE_SLACK points.
SHARES = {1: 20, 2: 15, 4: 12, 6: 15, 7: 22, 8: 16}
SHARE_SLACK = 5


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    return assistant_sessions.build("all")


@pytest.fixture(scope="module")
def loaded(everything) -> list[locomo.Conversation]:
    return locomo.load(everything)


def test_the_same_sessions_on_every_run(everything):
    again = assistant_sessions.build("all")
    assert json.dumps(again, sort_keys=True) == json.dumps(everything, sort_keys=True)


def test_at_least_twenty_sessions_of_300_to_1000_turns_over_4_to_10_days(everything, loaded):
    assert len(loaded) >= 20
    for sample, conv in zip(everything, loaded, strict=True):
        assert 300 <= len(conv.turns) <= 1000, (conv.sample_id, len(conv.turns))
        sittings = sorted({t.session for t in conv.turns})
        assert 4 <= len(sittings) <= 10, conv.sample_id
        assert all(f"session_{n}_date_time" in sample["conversation"] for n in sittings)
        # A sitting is one day, and the days follow each other.
        days = [{generated.day_of(t.occurred_at) for t in conv.turns if t.session == n} for n in sittings]
        assert all(len(d) == 1 for d in days), conv.sample_id
        times = [t.occurred_at for t in conv.turns]
        assert times == sorted(times)


def test_at_least_300_questions_in_every_category_at_roughly_its_share(everything, loaded):
    counts = Counter(q.category for conv in loaded for q in conv.questions)
    total = sum(counts.values())
    assert total >= 300
    assert set(counts) == set(SHARES)
    for category, share in SHARES.items():
        assert abs(100 * counts[category] / total - share) <= SHARE_SLACK, (category, counts)
    # No question is lost on loading.
    assert sum(len(s["qa"]) for s in everything) == total


def test_every_evidence_id_names_a_turn_of_its_session(everything, loaded):
    for sample, conv in zip(everything, loaded, strict=True):
        assert not conv.dropped_evidence, (conv.sample_id, conv.dropped_evidence)
        ids = {t.dia_id for t in conv.turns}
        for qa in sample["qa"]:
            assert qa["evidence"] and set(qa["evidence"]) <= ids, (sample["sample_id"], qa)


def test_every_answer_is_in_its_evidence(loaded):
    """A temporal answer is its evidence turn's day; a multi-hop answer's pieces ("; ") are each in
    one of its turns, two turns at least, said on different days; any other answer is in an evidence
    turn's text, whatever the case."""
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            turns = [by_id[e] for e in q.evidence]
            assert q.answer, q
            if q.category == 2:
                assert q.answer == generated.day_of(turns[0].occurred_at), (conv.sample_id, q)
                continue
            texts = [t.text.lower() for t in turns]
            parts = q.answer.split("; ") if q.category == 1 else [q.answer]
            for part in parts:
                assert any(part.lower() in text for text in texts), (conv.sample_id, q, part)
            if q.category == 1:
                assert len(turns) >= 2 and len({t.session for t in turns}) >= 2, (conv.sample_id, q)


def test_first_person_questions_ask_about_the_persons_own_words(loaded):
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.category == 7:
                assert " I " in f" {q.question} " or " my " in q.question, q
                assert all(by_id[e].role == "user" for e in q.evidence), (conv.sample_id, q)


def test_about_half_the_decisions_are_a_proposal_and_a_yes(loaded):
    """A proposal and its one-line yes: two evidence turns, the assistant's then the person's."""
    pairs, decisions = 0, 0
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.category != 8:
                continue
            decisions += 1
            roles = [by_id[e].role for e in q.evidence]
            if roles == ["assistant", "user"]:
                pairs += 1
                assert len(by_id[q.evidence[1]].text) <= 30, q
            else:
                assert roles == ["user"], (conv.sample_id, q)
    assert 0.3 <= pairs / decisions <= 0.7, (pairs, decisions)


def test_evidence_is_a_small_share_of_each_session_early_and_late(loaded):
    for conv in loaded:
        evidence = {e for q in conv.questions for e in q.evidence}
        assert 0.025 <= len(evidence) / len(conv.turns) <= 0.075, (conv.sample_id, len(evidence))
        where = {t.dia_id: i / len(conv.turns) for i, t in enumerate(conv.turns)}
        depths = sorted(where[e] for e in evidence)
        assert depths[0] < 1 / 3 and depths[-1] > 2 / 3, (conv.sample_id, depths[0], depths[-1])


def test_turns_carry_roles_names_and_tools_print_long_outputs(everything, loaded):
    for sample, conv in zip(everything, loaded, strict=True):
        person = sample["conversation"]["speaker_a"]
        assert sample["conversation"]["speaker_b"] == "assistant"
        assert person and " " not in person
        names = {
            role: {t.name for t in conv.turns if t.role == role} for role in ("user", "assistant", "tool")
        }
        assert set(names) == {t.role for t in conv.turns}
        assert names["user"] == {person}
        assert names["assistant"] == {"assistant"}
        assert names["tool"] <= TOOLS and len(names["tool"]) >= 6, names["tool"]
        assert all(t.speaker == t.name for t in conv.turns)
        for turn in conv.turns:
            if turn.role == "tool":
                assert 200 <= len(turn.text) <= 1200, (conv.sample_id, turn.dia_id, len(turn.text))
        # Routine turns outnumber the tool outputs, and the tools are used often.
        roles = Counter(t.role for t in conv.turns)
        assert roles["tool"] >= 0.1 * len(conv.turns)
        assert roles["user"] + roles["assistant"] > roles["tool"]


def test_sessions_differ_in_people_lives_and_answers(everything):
    assert len({s["conversation"]["speaker_a"] for s in everything}) == len(everything)
    assert len({s["life"] for s in everything}) >= 6
    answers = Counter(q["answer"] for s in everything for q in s["qa"])
    assert answers.most_common(1)[0][1] <= 6, answers.most_common(3)
    for sample in everything:
        questions = [q["question"] for q in sample["qa"]]
        assert len(set(questions)) == len(questions), sample["sample_id"]


def test_the_holdout_is_every_third_session_and_shares_none_with_dev():
    dev, holdout = assistant_sessions.build("dev"), assistant_sessions.build("holdout")
    dev_ids, holdout_ids = [s["sample_id"] for s in dev], [s["sample_id"] for s in holdout]
    assert holdout_ids == [f"assist-{n:02d}" for n in range(3, assistant_sessions.SESSIONS + 1, 3)]
    assert dev_ids == [f"assist-{n:02d}" for n in range(1, assistant_sessions.SESSIONS + 1) if n % 3]
    assert all(assistant_sessions.in_holdout(n) == (n % 3 == 0) for n in range(1, 40))
    assert [s["sample_id"] for s in assistant_sessions.build("all")] == sorted(dev_ids + holdout_ids)
    with pytest.raises(ValueError):
        assistant_sessions.build("test")


def test_the_command_writes_a_file_that_loads(tmp_path, capsys):
    from django.core.management import call_command

    out = tmp_path / "holdout.json"
    call_command("assistant_sessions", "--split", "holdout", "--out", str(out))
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(assistant_sessions.build("holdout")))
    conversations = locomo.load(written)
    assert [c.sample_id for c in conversations] == [f"assist-{n:02d}" for n in range(3, 22, 3)]
    assert all(c.questions and not c.dropped_evidence for c in conversations)
    printed = capsys.readouterr().out
    turns = sum(len(c.turns) for c in conversations)
    assert f"7 sessions (holdout), {turns} turns" in printed
    assert "first-person" in printed and "decision" in printed
