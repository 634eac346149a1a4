"""The corrections set (memory/evaluation/corrections.py): facts corrected in a later sitting, and
controls confirmed unchanged, planted in generated sessions; the set's promises."""

from __future__ import annotations

import json
import re
import string
from collections import Counter

import pytest

from memory.evaluation import corrections, locomo
from memory.evaluation import corrections_material as cm


@pytest.fixture(scope="module")
def everything() -> list[dict]:
    return corrections.build("all")


@pytest.fixture(scope="module")
def loaded(everything) -> list[locomo.Conversation]:
    return locomo.load(everything)


def says(text: str, value: str) -> bool:
    """Whether `text` says `value` as a whole (9443 is not in 19443, Lev not in level)."""
    return re.search(rf"(?<!\w){re.escape(value.lower())}(?!\w)", text.lower()) is not None


def place(dia_id: str) -> tuple[int, int]:
    sitting, turn = dia_id[1:].split(":")
    return int(sitting), int(turn)


def turns_of(sample: dict) -> dict[str, dict]:
    conv = sample["conversation"]
    return {t["dia_id"]: t for k, v in conv.items() if re.fullmatch(r"session_\d+", k) for t in v}


def test_the_same_sessions_on_every_run(everything):
    again = corrections.build("all")
    assert json.dumps(again, sort_keys=True) == json.dumps(everything, sort_keys=True)


def test_twenty_sessions_half_work_half_assistant(everything, loaded):
    assert [s["sample_id"] for s in everything] == [f"corr-{n:02d}" for n in range(1, 21)]
    assert Counter(s["kind"] for s in everything) == {"work": 10, "assistant": 10}
    assert [s["source"] for s in everything[:4]] == ["work-22", "assist-01", "work-23", "assist-02"]
    for conv in loaded:
        assert 300 <= len(conv.turns) <= 1100, (conv.sample_id, len(conv.turns))


def test_the_counts_per_category_and_split(everything, loaded):
    counts = Counter(q.category for conv in loaded for q in conv.questions)
    assert dict(counts) == {9: 66, 10: 22}
    assert sum(len(c.turns) for c in loaded) == 12783
    # Nothing dropped on loading: every question is kept, every evidence id names a turn.
    assert sum(len(s["qa"]) for s in everything) == sum(counts.values())
    assert all(not conv.dropped_evidence for conv in loaded)
    for sample in everything:
        per = Counter(q["category"] for q in sample["qa"])
        assert 3 <= per[9] <= 4 and 1 <= per[10] <= 2, (sample["sample_id"], per)
    for split, expected in (("dev", {9: 47, 10: 16}), ("holdout", {9: 19, 10: 6})):
        data = corrections.build(split)
        assert Counter(q["category"] for s in data for q in s["qa"]) == expected


def test_every_answer_is_in_its_evidence_and_not_in_its_question(everything):
    for sample in everything:
        by_id = turns_of(sample)
        for q in sample["qa"]:
            ids = q["evidence"] + q.get("previous_evidence", [])
            assert ids and set(ids) <= set(by_id), (sample["sample_id"], q)
            assert all(says(by_id[e]["text"], q["answer"]) for e in q["evidence"]), (sample["sample_id"], q)
            assert not says(q["question"], q["answer"])


def test_a_correction_comes_in_a_later_sitting_than_the_value_it_replaces(everything):
    for sample in everything:
        by_id = turns_of(sample)
        for q in (q for q in sample["qa"] if q["category"] == corrections.CORRECTION):
            assert len(q["evidence"]) == 1 and q["previous"] != q["answer"]
            new = place(q["evidence"][0])
            first = place(q["previous_evidence"][0])
            assert 1 <= new[0] - first[0] == q["sittings_apart"] <= 3, (sample["sample_id"], q)
            # Every turn with the stale value comes before the correction and says the old value,
            # not the new one; the original statement is the first of them.
            assert all(place(e) < new for e in q["previous_evidence"])
            assert sorted(q["previous_evidence"], key=place) == q["previous_evidence"]
            for e in q["previous_evidence"]:
                text = by_id[e]["text"]
                assert says(text, q["previous"]) and not says(text, q["answer"]), (sample["sample_id"], q, e)


def test_corrections_vary_in_who_makes_them_and_how_they_are_worded(everything):
    facts = [(s, q) for s in everything for q in s["qa"] if q["category"] == corrections.CORRECTION]
    assert Counter(q["how"] for _, q in facts).keys() == set(corrections.HOWS)
    assert min(Counter(q["how"] for _, q in facts).values()) >= 12
    # At least half say it without "correction", "actually" or "I meant"; some say it with them.
    texts = [turns_of(s)[q["evidence"][0]]["text"].lower() for s, q in facts]
    plain = sum(not any(k in t for k in cm.KEYWORDS) for t in texts)
    assert len(facts) / 2 <= plain < len(facts)
    worded = Counter(
        corrections.in_holdout(int(s["sample_id"][5:]))
        for (s, _), t in zip(facts, texts, strict=True)
        if any(k in t for k in cm.KEYWORDS)
    )
    assert worded[True] >= 3 and worded[False] >= 6  # in the holdout as in dev
    # Who said the value first: the person, the agent or a tool; and who corrected it.
    firsts = Counter(turns_of(s)[q["previous_evidence"][0]]["role"] for s, q in facts)
    seconds = Counter(turns_of(s)[q["evidence"][0]]["role"] for s, q in facts)
    assert set(firsts) == {"user", "assistant", "tool"} and set(seconds) == {"user", "tool"}
    # About a third repeat or use the stale value before the correction.
    repeated = sum(len(q["previous_evidence"]) >= 2 for _, q in facts)
    assert 0.25 <= repeated / len(facts) <= 0.45
    # The corrections spread over the sittings, and over the kinds of fact.
    assert Counter(q["sittings_apart"] for _, q in facts).keys() == {1, 2, 3}
    assert Counter(q["topic"] for _, q in facts).keys() == corrections.TOPICS.keys()
    for sample in everything:
        assert len({q["topic"] for q in sample["qa"]}) == len(sample["qa"])
    assert len(Counter(q["answer"] for _, q in facts)) >= len(facts) - 3


def test_a_control_is_said_and_later_confirmed_with_the_same_value(everything):
    controls = [(s, q) for s in everything for q in s["qa"] if q["category"] == corrections.UNCHANGED]
    for sample, q in controls:
        sittings = sorted({place(e)[0] for e in q["evidence"]})
        assert len(q["evidence"]) >= 2 and len(sittings) >= 2, (sample["sample_id"], q)
    # Some confirmations are worded like a correction, and some turn down an offered change.
    last = [turns_of(s)[q["evidence"][-1]]["text"].lower() for s, q in controls]
    assert any(any(k in t for k in cm.KEYWORDS) for t in last)
    assert Counter(q["how"] for _, q in controls).keys() == {"keyword", "plain", "agent", "declined"}


def test_the_filler_is_kept_whole_and_turns_stay_in_time_order(loaded):
    for number, conv in enumerate(loaded, start=1):
        _kind, source = corrections._source(number)
        before = [t.text for t in locomo.load([source])[0].turns]
        after = iter(t.text for t in conv.turns)
        assert all(text in after for text in before)  # the filler is a subsequence, in order
        assert all(t.name and t.role and t.occurred_at is not None for t in conv.turns)
        times = [t.occurred_at for t in conv.turns]
        assert times == sorted(times)
        # Re-numbered: D<sitting>:1, 2, 3, … in every sitting.
        for s in {t.session for t in conv.turns}:
            ids = [t.dia_id for t in conv.turns if t.session == s]
            assert ids == [f"D{s}:{k}" for k in range(1, len(ids) + 1)]


def test_every_template_names_only_known_slots():
    known = {"thing", "Thing", "old", "Old", "new", "alt", "mate", "mate2", "subj", "Subj", "channel", "ref"}
    known |= {"sha", "sha2", "sha3", "pr", "project", "person", "partner", "mother", "sibling", "kid"}
    known |= {"friend", "home", "street", "money", "slug", "moving", "moved", "city", "flight", "airline"}
    known |= {"day", "firm", "diff", "pet"}
    templates = [
        t for topic in corrections.TOPICS.values() for k, v in topic.items() if k != "kind" for t in v
    ]
    templates += cm.KEYWORD_SELF + cm.PLAIN_SELF + cm.RELAY + cm.KEYWORD_AGENT + cm.PLAIN_AGENT
    templates += cm.CONFIRM_KEYWORD + cm.CONFIRM_PLAIN + cm.CONFIRM_AGENT + cm.PROPOSE + cm.DECLINE
    templates += cm.VENUE_EVENTS + cm.GUEST_EVENTS + [a for a, _ in cm.APPOINTMENTS]
    fields = {f for t in templates for _, f, _, _ in string.Formatter().parse(t) if f}
    assert fields <= known, fields - known
    # The plain phrasings are plain: no "correction", "actually" or "I meant".
    plain = (
        cm.PLAIN_SELF
        + cm.PLAIN_AGENT
        + cm.RELAY
        + [c for t in corrections.TOPICS.values() for c in t["change"]]
    )
    assert not [p for p in plain if any(k in p.lower() for k in cm.KEYWORDS)]
    assert all(any(k in p.lower() for k in cm.KEYWORDS) for p in cm.KEYWORD_SELF + cm.KEYWORD_AGENT)


def test_the_holdout_is_every_third_session_and_shares_none_with_dev():
    dev, holdout = corrections.build("dev"), corrections.build("holdout")
    assert [s["sample_id"] for s in holdout] == [f"corr-{n:02d}" for n in range(3, 19, 3)]
    assert not {s["source"] for s in dev} & {s["source"] for s in holdout}
    assert {s["source"] for s in holdout if s["kind"] == "assistant"} == {
        "assist-03",
        "assist-06",
        "assist-09",
    }


def test_the_extra_split_is_twenty_more_sessions_on_fillers_the_set_does_not_use(everything):
    extra = corrections.build("extra")
    assert [s["sample_id"] for s in extra] == [f"corr-{n:02d}" for n in range(21, 41)]
    assert not {s["source"] for s in extra} & {s["source"] for s in everything}
    assert Counter(s["kind"] for s in extra) == {"work": 10, "assistant": 10}


def test_the_superseded_turns_are_loaded_and_judged_by_the_hits_order(everything, loaded):
    raw = {(s["sample_id"], q["question"]): q for s in everything for q in s["qa"] if q["category"] == 9}
    changed = [(conv.sample_id, q) for conv in loaded for q in conv.questions if q.category == 9]
    assert len(changed) == 66
    assert all(q.superseded == tuple(raw[c, q.question]["previous_evidence"]) for c, q in changed)
    assert all(not q.superseded for conv in loaded for q in conv.questions if q.category == 10)
    # Hits best first: the evidence (7) ahead of the stale turn (3), first or not; behind it; absent.
    assert locomo.ahead_of([7, 5, 3], [7], [3]) == (True, True)
    assert locomo.ahead_of([5, 7, 3], [7], [3]) == (True, False)
    assert locomo.ahead_of([3, 7], [7], [3]) == (False, False)
    assert locomo.ahead_of([7], [7], [3]) == (True, True)  # the stale one not returned
    assert locomo.ahead_of([3], [7], [3]) == (False, False)
    outcomes = [
        locomo.Outcome("corr-01", 9, True, True, 1.0, 10, 1.0, ahead=ahead, first=first)
        for ahead, first in ((True, True), (True, False), (False, False))
    ]
    outcomes.append(locomo.Outcome("corr-01", 10, True, True, 1.0, 10, 1.0))
    assert locomo.report(outcomes)["superseded"] == {"n": 3, "ahead": 66.7, "first": 33.3}


def test_the_report_names_the_new_categories():
    outcomes = [locomo.Outcome("corr-01", n, True, n == 10, 1.0, 10, 1.0) for n in (9, 9, 10)]
    figures = locomo.report(outcomes)
    assert list(figures["categories"])[-2:] == ["correction", "unchanged"]
    assert figures["categories"]["correction"]["strict"] == 0.0
    assert "unchanged" in locomo.table(figures)


def test_the_command_writes_the_split(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "holdout.json"
    call_command("corrections", "--split", "holdout", "--out", str(out))
    written = json.loads(out.read_text())
    assert [s["sample_id"] for s in written] == [f"corr-{n:02d}" for n in range(3, 19, 3)]
    assert written == json.loads(json.dumps(corrections.build("holdout")))


def test_show_items_gives_each_evidence_and_superseded_turn_its_place_among_those_returned():
    from memory.management.commands.eval_memory import describe

    q = locomo.Question("What day is the check-up?", 9, ("D3:12",), superseded=("D2:2", "D2:9"))
    position_of = {"D2:2": 66, "D2:9": 80, "D3:12": 122}
    text_of = {"D2:2": "Booked for\nWednesday.", "D2:9": "Wednesday it is.", "D3:12": "No, it's Friday."}

    lines = describe(q, [67, 66, 121, 122, 66], position_of, text_of)

    assert lines == [
        "[correction] What day is the check-up?",
        "  #4 D3:12: No, it's Friday.",
        "  was #2 D2:2: Booked for Wednesday.",
        "  was - D2:9: Wednesday it is.",
    ]
