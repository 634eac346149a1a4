"""The team channel set (memory/evaluation/team_channel.py): several people share one agent; the
set's promises — size, categories, evidence that names turns and holds each answer, several speakers
a session, attributed asks with other people's similar asks beside them, no question that says "I",
the split rule, determinism — and that the command writes a file `locomo.load` reads."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections import Counter

import pytest

from memory.evaluation import generated, locomo, team_channel
from memory.evaluation.team_channel_facts import OFFERS

TOOLS = {"ci", "tickets", "sql", "calendar", "deploy", "docs", "oncall", "loadtest"}
CATEGORIES = {1, 2, 4, 6, 7, 8, 11, 12}
# The whole set ("all", keys sorted, ASCII) as it was before its questions named distractors: with
# the `distractors` lists taken out it must hash the same, so that labelling them changed no
# question, evidence, answer or turn. A deliberate change to the set changes this too.
UNLABELLED_SHA256 = "c6187ad860e1fa20add824712c63722f7a08f9dab350dadeb7fe4d7f80501ed1"
# Words too common to count as shared between a paraphrased question and its evidence.
COMMON = {"about", "after", "their", "there", "which", "would", "could", "those", "these", "where"}


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    return team_channel.build("all")


@pytest.fixture(scope="module")
def loaded(everything) -> list[locomo.Conversation]:
    return locomo.load(everything)


def test_the_same_sessions_on_every_run(everything):
    again = team_channel.build("all")
    assert json.dumps(again, sort_keys=True) == json.dumps(everything, sort_keys=True)


def test_at_least_18_sessions_of_300_to_800_turns_over_4_to_8_days(everything, loaded):
    assert len(loaded) >= 18
    for sample, conv in zip(everything, loaded, strict=True):
        assert 300 <= len(conv.turns) <= 800, (conv.sample_id, len(conv.turns))
        sittings = sorted({t.session for t in conv.turns})
        assert 4 <= len(sittings) <= 8, conv.sample_id
        assert all(f"session_{n}_date_time" in sample["conversation"] for n in sittings)
        days = [{generated.day_of(t.occurred_at) for t in conv.turns if t.session == n} for n in sittings]
        assert all(len(d) == 1 for d in days), conv.sample_id
        times = [t.occurred_at for t in conv.turns]
        assert times == sorted(times)


def test_at_least_250_questions_in_every_category(everything, loaded):
    counts = Counter(q.category for conv in loaded for q in conv.questions)
    assert sum(counts.values()) >= 250
    assert set(counts) == CATEGORIES
    assert all(n in locomo.CATEGORIES for n in counts)
    assert counts[12] >= 40 and counts[11] >= 30 and counts[8] >= 30, counts
    # No question is lost on loading.
    assert sum(len(s["qa"]) for s in everything) == sum(counts.values())


def test_every_evidence_id_names_a_turn_of_its_session(everything, loaded):
    for sample, conv in zip(everything, loaded, strict=True):
        assert not conv.dropped_evidence, (conv.sample_id, conv.dropped_evidence)
        ids = {t.dia_id for t in conv.turns}
        for qa in sample["qa"]:
            assert qa["evidence"] and set(qa["evidence"]) <= ids, (sample["sample_id"], qa)
            assert len(set(qa["evidence"])) == len(qa["evidence"]), qa


def test_every_answer_is_in_its_evidence(everything, loaded):
    """A temporal answer is its evidence turn's day; a "who" answer is the person who said the last
    evidence turn (not a name in its text); a multi-hop answer's pieces are each in one of two or
    more evidence turns; any other answer is in an evidence turn's text."""
    for sample, conv in zip(everything, loaded, strict=True):
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            turns = [by_id[e] for e in q.evidence]
            assert q.answer, q
            if q.category == 2:
                assert q.answer == generated.day_of(turns[0].occurred_at), (conv.sample_id, q)
                continue
            if q.category == 11:
                assert q.answer in sample["people"], q
                assert turns[-1].role == "user" and turns[-1].name == q.answer, (conv.sample_id, q)
                assert q.answer not in turns[-1].text, q
                continue
            texts = [t.text.lower() for t in turns]
            parts = q.answer.split("; ") if q.category == 1 else [q.answer]
            for part in parts:
                assert any(part.lower() in text for text in texts), (conv.sample_id, q, part)
            if q.category == 1:
                assert len(turns) >= 2 and len({t.session for t in turns}) >= 2, (conv.sample_id, q)


def test_attributed_asks_are_the_named_persons_beside_other_peoples_asks(loaded):
    """The evidence is one turn, by the person the question names; someone else asked the agent for
    another change to the same document in the same session (the distractor)."""
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.category != 12:
                continue
            (turn,) = (by_id[e] for e in q.evidence)
            assert turn.role == "user" and re.search(rf"\b{turn.name}\b", q.question), q
            document = re.search(r"in the (.+)\?$|to the (.+) did", q.question)
            assert document, q
            name = document.group(1) or document.group(2)
            assert name in turn.text
            rivals = {
                t.name
                for t in conv.turns
                if t.role == "user" and name in t.text and "assistant" in t.text and t.dia_id != turn.dia_id
            }
            assert rivals - {turn.name}, (conv.sample_id, q)


def test_labelling_the_distractors_changed_nothing_else(everything):
    stripped = copy.deepcopy(everything)
    labelled = Counter()
    for sample in stripped:
        for q in sample["qa"]:
            if "distractors" in q:
                labelled[q["category"]] += 1
                del q["distractors"]
    assert labelled == {12: 54, 11: 36}
    digest = hashlib.sha256(json.dumps(stripped, sort_keys=True).encode()).hexdigest()
    assert digest == UNLABELLED_SHA256


def _pattern(template: str) -> re.Pattern[str]:
    """An offer's template ("I'll review the {c} PR after lunch.") as a pattern of its filled text."""
    return re.compile(re.sub(r"\\\{\w+\\\}", ".+", re.escape(template)) + "$")


def test_distractors_are_other_peoples_similar_turns_and_never_the_evidence(everything, loaded):
    """An attributed question's distractors are every other person's ask to the agent about the same
    document; a who question's, another person's offer of the same kind as the question's."""
    for sample, conv in zip(everything, loaded, strict=True):
        raw = {q["question"]: q for q in sample["qa"]}
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            assert q.distractors == tuple(raw[q.question].get("distractors", ())), q
            if q.category not in (11, 12):
                assert not q.distractors, q
                continue
            assert q.distractors and not set(q.distractors) & set(q.evidence), q
            assert len(set(q.distractors)) == len(q.distractors)
            others = [by_id[d] for d in q.distractors]
            speakers = {by_id[e].name for e in q.evidence}
            assert all(t.role == "user" and t.name not in speakers for t in others), (conv.sample_id, q)
            if q.category == 12:
                document = re.search(r"in the (.+)\?$|to the (.+) did", q.question)
                assert document, q
                name = document.group(1) or document.group(2)
                asks = {
                    t.dia_id
                    for t in conv.turns
                    if t.role == "user" and name in t.text and "assistant" in t.text
                }
                assert set(q.distractors) == asks - set(q.evidence), (conv.sample_id, q)
                assert len({t.name for t in others}) == len(others)
            else:
                (row,) = (r for r in OFFERS if _pattern(r[0]).match(q.question))
                assert len(others) == 1 and _pattern(row[3]).match(others[0].text), (q, others[0].text)


def test_decisions_are_a_proposal_and_someone_elses_agreement(loaded):
    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.category != 8:
                continue
            proposal, yes = (by_id[e] for e in q.evidence)
            assert yes.role == "user" and len(yes.text) <= 30, q
            assert proposal.name != yes.name, q
            assert q.answer in proposal.text


def test_no_question_says_i_and_the_we_questions_say_we(everything):
    for sample in everything:
        questions = [q["question"] for q in sample["qa"]]
        assert len(set(questions)) == len(questions), sample["sample_id"]
        for q in sample["qa"]:
            assert not re.search(r"\b(I|my|me|I'm|I've)\b", q["question"]), q
            if q["category"] == 7:
                assert re.search(r"\bwe\b", q["question"]), q


def test_paraphrased_questions_share_at_most_one_longer_word_with_their_evidence(loaded):
    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 5} - COMMON

    for conv in loaded:
        by_id = {t.dia_id: t for t in conv.turns}
        for q in conv.questions:
            if q.category == 6:
                shared = words(q.question) & words(" ".join(by_id[e].text for e in q.evidence))
                assert len(shared) <= 1, (q.question, shared)


def test_several_people_speak_in_every_session_and_tools_print_outputs(everything, loaded):
    for sample, conv in zip(everything, loaded, strict=True):
        people = sample["people"]
        assert 3 <= len(people) <= 6 and len(set(people)) == len(people)
        spoken = Counter(t.name for t in conv.turns if t.role == "user")
        assert set(spoken) == set(people), (conv.sample_id, spoken)
        # Everyone says a fair share, and no one says most of it.
        assert min(spoken.values()) >= 0.05 * sum(spoken.values()), spoken
        assert max(spoken.values()) <= 0.6 * sum(spoken.values()), spoken
        assert {t.name for t in conv.turns if t.role == "assistant"} == {"assistant"}
        tools = {t.name for t in conv.turns if t.role == "tool"}
        assert tools <= TOOLS and len(tools) >= 6, tools
        assert all(t.speaker == t.name for t in conv.turns)
        # The evidence is spread over the people: not all of it one person's.
        evidence = {e for q in conv.questions for e in q.evidence}
        by_id = {t.dia_id: t for t in conv.turns}
        assert len({by_id[e].name for e in evidence if by_id[e].role == "user"}) >= 3
        assert 0.02 <= len(evidence) / len(conv.turns) <= 0.1, (conv.sample_id, len(evidence))


def test_sessions_differ_in_teams_people_and_answers(everything):
    assert len({s["team"] for s in everything}) == 6
    assert len({tuple(s["people"]) for s in everything}) == len(everything)
    answers = Counter(q["answer"] for s in everything for q in s["qa"] if q["category"] not in (2, 11))
    assert answers.most_common(1)[0][1] <= 8, answers.most_common(3)


def test_the_holdout_is_every_third_session_and_shares_none_with_dev():
    dev, holdout = team_channel.build("dev"), team_channel.build("holdout")
    dev_ids, holdout_ids = [s["sample_id"] for s in dev], [s["sample_id"] for s in holdout]
    assert holdout_ids == [f"team-{n:02d}" for n in range(3, team_channel.SESSIONS + 1, 3)]
    assert dev_ids == [f"team-{n:02d}" for n in range(1, team_channel.SESSIONS + 1) if n % 3]
    with pytest.raises(ValueError):
        team_channel.build("test")


def test_the_command_writes_a_file_that_loads(tmp_path, capsys):
    from django.core.management import call_command

    out = tmp_path / "holdout.json"
    call_command("team_channel", "--split", "holdout", "--out", str(out))
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(team_channel.build("holdout")))
    conversations = locomo.load(written)
    assert [c.sample_id for c in conversations] == [f"team-{n:02d}" for n in range(3, 19, 3)]
    assert all(c.questions and not c.dropped_evidence for c in conversations)
    printed = capsys.readouterr().out
    assert f"6 sessions (holdout), {sum(len(c.turns) for c in conversations)} turns" in printed
    assert "who" in printed and "attributed" in printed
