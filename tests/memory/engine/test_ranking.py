"""engine/ranking.py: the recall recipe over a Search made of a list of turns, without Django."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest

from memory.engine import bm25, ranking
from memory.engine.embeddings import EmbeddingUnavailable


class ListSearch:
    """A Search over (speaker, when, text) turns: BM25 from the engine's own index, a "dense"
    ranking that prefers the turns listed in `near` for each question row, every turn a candidate
    unless listed in `outside`."""

    def __init__(self, turns, *, near=None, outside=(), dense_fails=False, roles=None, step=10):
        self.turns = turns
        self.step = step  # positions are ids × step (10: told apart from ids in assertions)
        self.roles = roles or {}
        self.index = bm25.Index([(pk, text) for pk, (_, _, text) in enumerate(turns)])
        self.near = near or [[], []]
        self.outside = set(outside)
        self.dense_fails = dense_fails
        self.lexical_queries: list[str] = []
        self.dense_rows: list[int] = []

    def lexical(self, query: str, limit: int) -> list[tuple[int, float]]:
        self.lexical_queries.append(query)
        from memory.engine import retrieval

        words = [w for t in retrieval.query_terms(query) for w in bm25.words(t)]
        return self.index.search(words, limit, None)

    def dense(self, rows: int, limit: int) -> list[list[tuple[int, float]]]:
        if self.dense_fails:
            raise EmbeddingUnavailable("no model here")
        self.dense_rows.append(rows)
        return [[(pk, 1.0 - n / 10) for n, pk in enumerate(self.near[r])][:limit] for r in range(rows)]

    def texts(self, item_ids: Sequence[int], chars: int) -> dict[int, str]:
        return {pk: self.turns[pk][2][:chars] for pk in item_ids}

    def vocabulary(self) -> bm25.Index | None:
        return self.index

    def candidates(self, item_ids: Sequence[int]) -> dict[int, ranking.Candidate]:
        return {
            pk: ranking.Candidate(
                pk * self.step, self.turns[pk][0], self.turns[pk][1], self.roles.get(pk, "")
            )
            for pk in item_ids
            if pk not in self.outside
        }


MAY = datetime(2023, 5, 8, 13, 0)
JUNE = datetime(2023, 6, 9, 13, 0)
TURNS = [
    ("Caroline", MAY, "I went to a pottery class yesterday, it was lovely"),
    ("Melanie", MAY, "Caroline, you should try painting too"),
    ("Melanie", JUNE, "I painted a sunrise over the lake last week"),
    ("Caroline", JUNE, "The support group meets on Tuesdays now"),
    ("Melanie", JUNE, "We camped by the lake with the kids"),
]
SPEAKERS = {"Caroline", "Melanie"}


def _question(text: str, rules: ranking.Rules = ranking.ALL_RULES) -> ranking.Question:
    return ranking.read_question(text, SPEAKERS, people=True, rules=rules)


def test_question_names_its_subject_and_is_asked_in_their_first_person():
    q = _question("What did Melanie paint with her kids?")
    assert q.named == {"Melanie"} and q.about == {"Melanie"}
    assert q.own == "What did I paint with my kids?"
    assert q.asked == ["What did Melanie paint with her kids?", "What did I paint with my kids?"]
    two = _question("What did Caroline tell Melanie about painting?")
    assert two.named == SPEAKERS and two.about == {"Caroline"}
    # Without the subject rule both are asked about, and "I" would stand for nobody.
    plain = _question(
        "What did Caroline tell Melanie about painting?", ranking.ALL_RULES.without(["subject"])
    )
    assert plain.about == SPEAKERS and plain.own is None


def test_each_switch_turns_its_rule_off():
    rules = ranking.ALL_RULES.without(["first_person", "time_boost"])
    q = _question("What did Melanie paint in June 2023?", rules)
    assert q.own is None and q.times == ()
    assert rules.off() == ["first_person", "time_boost"]
    with pytest.raises(ValueError, match="unknown recall rule.*paint"):
        ranking.ALL_RULES.without(["paint"])


def test_context_names_tools_by_any_word_and_asks_no_first_person():
    q = ranking.read_question(
        "what did pytest say", {"pytest", "bash"}, people=False, rules=ranking.ALL_RULES
    )
    assert q.named == {"pytest"} and q.about == {"pytest"} and q.own is None


def _rank(search, text, rules=ranking.ALL_RULES, words=None):
    return ranking.rank(search, _question(text, rules), limit=50, rules=rules, people=True, words=words)


def test_the_named_speakers_turns_and_the_named_month_rank_higher():
    search = ListSearch(TURNS)
    ranked, why = _rank(search, "What did Melanie do by the lake in June 2023?")
    assert why is None
    assert ranked[0][0] in (20, 40)  # Melanie's June turns about the lake, as positions
    off = ranking.ALL_RULES.without(["speaker_boost", "time_boost", "first_person"])
    plain, _ = _rank(ListSearch(TURNS), "What did Melanie do by the lake in June 2023?", off)
    boosted = dict(ranked)
    assert boosted[20] > dict(plain)[20]


def test_the_first_person_question_adds_its_own_dense_ranking():
    # The dense ranking of the question finds the turn said *to* Melanie; as she would ask it, her own.
    search = ListSearch(TURNS, near=[[1], [2]])
    ranked, _ = _rank(search, "What did Melanie paint?")
    assert search.dense_rows == [2]
    without = ListSearch(TURNS, near=[[1], [2]])
    plain, _ = _rank(without, "What did Melanie paint?", ranking.ALL_RULES.without(["first_person"]))
    assert without.dense_rows == [1]
    # "painted" is no keyword match for "paint": only her own words, by meaning, find the turn.
    assert 20 in dict(ranked) and 20 not in dict(plain)


def test_feedback_and_expansion_are_extra_keyword_rankings_behind_their_switches():
    def words(terms):  # every word at the same point: all of them near each other
        return np.ones((len(terms), 4), dtype=np.float32)

    # Expansion picks rare words only (in at most 5 % of the turns): a session of some length.
    filler = [("Melanie", JUNE, f"note number {n} about errand {n}") for n in range(40)]
    search = ListSearch(TURNS + filler)
    # (`updates` searches the first hits' own words: not counted here.)
    _rank(search, "Which class did Caroline go to?", ranking.ALL_RULES.without(["updates"]), words=words)
    assert len(search.lexical_queries) == 3  # as asked, widened by feedback, the expansion words
    assert search.lexical_queries[1].startswith("Which class did Caroline go to? ")
    quiet = ListSearch(TURNS + filler)
    _rank(
        quiet,
        "Which class did Caroline go to?",
        ranking.ALL_RULES.without(["feedback", "expansion", "updates"]),
        words,
    )
    assert quiet.lexical_queries == ["Which class did Caroline go to?"]


def test_only_candidates_come_back_and_a_missing_model_falls_back_to_keywords():
    search = ListSearch(TURNS, outside={0})
    ranked, _ = _rank(search, "pottery class")
    assert 0 not in {p for p, _ in ranked}
    lexical_only, why = _rank(ListSearch(TURNS, dense_fails=True), "pottery class")
    assert why is not None and "keywords only" in why
    assert lexical_only[0][0] == 0


# An agent's session: the person (role user), the agent and its tools.
WORK = [
    ("read_file", MAY, "def later(items: list) -> list: put = list(items); return put  # asked later"),
    ("Dana", MAY, "Put this on the list for later: tighten the CORS settings."),
    ("assistant", MAY, "Noted, the CORS settings are on the list."),
    *[("bash", JUNE, f"test run {n}: 12 passed") for n in range(20)],
]
WORK_ROLES = {0: "tool", 1: "user", 2: "assistant"} | {n: "tool" for n in range(3, 23)}
PLAIN = ranking.ALL_RULES.without(["feedback", "expansion"])


def _rank_work(text, rules):
    search = ListSearch(WORK, roles=WORK_ROLES)
    question = ranking.read_question(text, {"Dana"}, people=True, rules=rules)
    ranked, _ = ranking.rank(search, question, limit=50, rules=rules, people=True, words=None)
    return [position for position, _ in ranked]


def test_a_question_that_says_i_ranks_the_person_s_own_turns_higher():
    # A source file sharing more of the question's words comes first by keywords alone.
    asked = "What did I ask you to put on the list for later?"
    assert _rank_work(asked, PLAIN.without(["asker"]))[0] == 0
    assert _rank_work(asked, PLAIN)[0] == 10  # Dana's own ask
    # Without "I" the question is not the person's about their own words: no boost.
    assert _rank_work("What is on the list to put off for later?", PLAIN)[0] == 0


def test_only_the_word_i_makes_a_question_the_person_s():
    from memory.engine import questions

    assert questions.asked_as_the_person("Which library did I tell you to keep out?")
    assert questions.asked_as_the_person("What have I asked you to put on the list for later?")
    assert not questions.asked_as_the_person("What did you tell me about my cache?")
    assert not questions.asked_as_the_person("Which AI model did Iris pick?")
    assert not ranking.read_question("What did I say?", {"Dana"}, people=False, rules=PLAIN).asker


# The person's instruction shares no word with the question, and the vectors put 70 test runs
# before it; their request shares several of the question's words.
TOLD = [
    ("Dana", MAY, "Can you tell me which library the project uses for the store?"),
    ("assistant", MAY, "The project keeps its state in a plain module, no library."),
    ("Dana", MAY, "Please don't pull in Redux anywhere in runlog-app."),
    *[("bash", JUNE, f"test run {n}: 12 passed") for n in range(80)],
]
TOLD_ROLES = {0: "user", 1: "assistant", 2: "user"} | {n: "tool" for n in range(3, 83)}


def _order_told(text, rules):
    """Where the request (0) and the instruction (2) come in the ranking."""
    search = ListSearch(TOLD, roles=TOLD_ROLES, near=[[*range(3, 73), 2], []])
    question = ranking.read_question(text, {"Dana"}, people=True, rules=rules)
    ranked, _ = ranking.rank(search, question, limit=100, rules=rules, people=True, words=None)
    order = [position for position, _ in ranked]
    return order.index(0), order.index(20)


def test_asking_what_the_person_told_the_agent_ranks_their_instructions_higher():
    asked = "Which library did I tell you to keep out of the project?"
    request, instruction = _order_told(asked, PLAIN.without(["instructions"]))
    assert request < instruction  # by the question's words
    request, instruction = _order_told(asked, PLAIN)
    assert instruction < request
    # A question that says "I" but asks about no instruction leaves the person's turns as they were.
    request, instruction = _order_told("Which library did I pick for the project?", PLAIN)
    assert request < instruction


def test_only_a_verb_of_telling_makes_a_question_ask_for_instructions():
    from memory.engine import questions

    assert questions.asks_for_instructions("What did I say I prefer for logging?")
    assert questions.asks_for_instructions("What did I ask you not to use for background jobs?")
    assert questions.asks_for_instructions("What did I want the new module for?")
    assert not questions.asks_for_instructions("What did I break yesterday?")
    assert not questions.asks_for_instructions("What did you tell me about the cache?")  # no "I"
    assert not ranking.read_question(
        "What did I tell you?", {"Dana"}, people=True, rules=PLAIN.without(["instructions"])
    ).instructions


DECIDED = [
    ("Dana", MAY, "Can you check the ingress logs for the edge proxy timeouts?"),
    ("assistant", MAY, "The ingress logs show 3 proxy timeouts on the edge this morning."),
    ("assistant", MAY, "Two options: ingress-nginx, or Traefik as before. I'd lean to ingress-nginx."),
    ("Dana", MAY, "Agreed, go with your first option."),
    *[("bash", JUNE, f"test run {n}: 12 passed") for n in range(80)],
]
DECIDED_ROLES = {0: "user", 1: "assistant", 2: "assistant", 3: "user"} | {n: "tool" for n in range(4, 84)}


def _order_decided(text, rules):
    """Where the two turns that mention the proxy (0, 1) and the two that settle it (2, 3) come."""
    search = ListSearch(DECIDED, roles=DECIDED_ROLES, near=[[0, 1, *range(4, 24), 2, 3, *range(24, 74)], []])
    question = ranking.read_question(text, {"Dana"}, people=True, rules=rules)
    ranked, _ = ranking.rank(search, question, limit=100, rules=rules, people=True, words=None)
    order = [position for position, _ in ranked]
    return [order.index(n * 10) for n in range(4)]


def test_asking_what_was_decided_ranks_the_turns_that_settled_it_higher():
    asked = "What did we settle on for the edge proxy?"
    mention, report, proposal, agreement = _order_decided(asked, PLAIN.without(["decisions"]))
    assert max(mention, report) < min(proposal, agreement)  # by the question's words
    mention, report, proposal, agreement = _order_decided(asked, PLAIN)
    assert max(proposal, agreement) < min(mention, report)
    # A question that asks no decision leaves them as they were.
    mention, report, proposal, agreement = _order_decided("What happened to the edge proxy?", PLAIN)
    assert max(mention, report) < min(proposal, agreement)


def test_a_question_asks_for_a_decision_by_its_verb_and_a_turn_reads_as_one_by_its_words():
    from memory.engine import questions, salience

    for asked in (
        "What did we decide about migrations?",
        "What did we settle on for background jobs?",
        "Which queue did we go with?",
        "What did we agree on for the release?",
    ):
        assert questions.asks_for_decision(asked), asked
    assert not questions.asks_for_decision("What did we change in the migrations?")
    assert not ranking.read_question(
        "What did we decide?", {"Dana"}, people=True, rules=PLAIN.without(["decisions"])
    ).decision
    assert salience.reads_as_decision("OK, decision made: pandera, not great_expectations.")
    assert salience.reads_as_decision("Fine by me, let's go with Postgres.")
    assert not salience.reads_as_decision("The ingress logs show 3 proxy timeouts.")


# A deadline set, asked about often, and moved days later in other words than the question's.
MOVED = [
    ("Dana", MAY, "The deadline for the billing refactor is due on March 12."),
    *[("Dana", MAY, f"Please refactor the billing module, part {n}.") for n in range(12)],
    ("assistant", MAY, "The billing tests pass after the refactor of part 3."),
    ("Dana", JUNE, "They pushed the billing refactor back to March 14."),
    *[("bash", JUNE, f"test run {n}: 12 passed") for n in range(20)],
]


def _order_moved(text, rules):
    search = ListSearch(MOVED)
    question = ranking.read_question(text, {"Dana"}, people=True, rules=rules)
    ranked, _ = ranking.rank(search, question, limit=100, rules=rules, people=True, words=None)
    return [position for position, _ in ranked]


def test_a_later_turn_that_changes_a_first_hit_ranks_just_above_it():
    asked = "When is the billing refactor due?"
    order = _order_moved(asked, PLAIN.without(["updates"]))
    assert order[0] == 0 and order.index(140) > 3  # the old deadline first, the new one far behind
    order = _order_moved(asked, PLAIN)
    assert order[:2] == [140, 0]


PORT = [
    ("Dana", MAY, "The admin API listens on 8080."),
    ("Dana", JUNE, "Should I move the admin sync to Monday?"),
    ("Dana", JUNE, "Scratch the 8080 idea, we're on 8443."),
    *[("bash", JUNE, f"admin check {n}: all services report ok after the nightly run") for n in range(20)],
]


def test_a_change_shares_two_words_or_a_rare_one_with_what_it_changes():
    search = ListSearch(PORT)
    question = ranking.read_question(
        "Which port does the admin API listen on?", {"Dana"}, people=True, rules=PLAIN
    )
    ranked, _ = ranking.rank(search, question, limit=100, rules=PLAIN, people=True, words=None)
    order = [position for position, _ in ranked]
    # "8080" is in two turns of 23; "admin" in all but one: the sync moved to Monday reads as a
    # change, and is like the port's turn by its words, but not about it.
    assert order[:2] == [20, 0]
    assert order.index(10) > order.index(0)


def test_of_two_changes_the_latest_comes_first():
    later = MOVED + [("Dana", JUNE, "Correction: the billing refactor deadline is actually March 19.")]
    search = ListSearch(later)
    question = ranking.read_question("When is the billing refactor due?", {"Dana"}, people=True, rules=PLAIN)
    ranked, _ = ranking.rank(search, question, limit=100, rules=PLAIN, people=True, words=None)
    assert [position for position, _ in ranked][:3] == [(len(later) - 1) * 10, 140, 0]


def test_a_turn_reads_as_a_change_by_its_words():
    from memory.engine import salience

    for changed in (
        "Correction: the billing refactor is actually due March 14",
        "They pushed the go-live to the 14th.",
        "Scratch the 8080 idea, we're on 8443.",
        "Not Tuesday — Wednesday.",
        "The review is now on Thursday.",
        "[email_search] the airline has moved flight BA 482 to 18:40",
        "No — not ghcr.io/acme/app, that one is being retired. Use registry.int.acme.io/app.",
        "The book club dinner is at 12 Orchard Mews, not The Lamplighter.",
        "The table at Saffron House is 9 pm now; same party of four.",
        "You've got the old value for the number of guests; it's 11 people.",
        "Please fix your notes: the venue moved.",
    ):
        assert salience.reads_as_update(changed), changed
    for unchanged in (
        "I'm now at the gym",
        "I'll update the README",
        "The deadline for the billing refactor is March 12",
        "I am not sure, but it could work",
        "Fine, not bad at all",
        "That's fine, leave it for now.",
        "Keep an eye on the grinder, it's €576 right now.",
        "back now. status?",
        "It was such a nice change to my regular life.",
    ):
        assert not salience.reads_as_update(unchanged), unchanged


def test_a_change_goes_above_the_hit_s_next_turn_too():
    # The reply after a statement is indexed with the statement as its context, and may rank above it.
    turns = [PORT[0], ("assistant", MAY, "Great, admin API sorted then."), *PORT[2:]]
    question = ranking.read_question(
        "Which port does the admin API listen on?", {"Dana"}, people=True, rules=PLAIN
    )

    def order(rules):
        search = ListSearch(turns, near=[[1, 0], []], step=1)  # positions next to each other
        ranked, _ = ranking.rank(search, question, limit=100, rules=rules, people=True, words=None)
        return [position for position, _ in ranked]

    assert order(PLAIN.without(["updates"]))[:2] == [1, 0]
    assert order(PLAIN)[:3] == [2, 1, 0]


def test_a_change_of_the_turn_before_a_first_hit_goes_above_the_hit():
    # A turn is indexed with the turn before it as its context, so "Booking the hotel." can be the
    # first hit for a question about the check-up booked just before it, and brings that turn back
    # as its neighbour: the change to the check-up goes above both.
    turns = [
        ("Ana", MAY, "I've booked the dental check-up for Wednesday at 9:30."),
        ("assistant", MAY, "Booking the Harbourlight Hotel in Reykjavik next."),
        *[("bash", MAY, f"search {n}: hotels in Reykjavik, none free") for n in range(20)],
        ("Ana", JUNE, "Wednesday? No, it's Friday for the dental check-up."),
    ]
    question = ranking.read_question("Which hotel in Reykjavik?", {"Ana"}, people=True, rules=PLAIN)

    def order(rules):
        search = ListSearch(turns, near=[[1, 2, 3, 0], []], step=1)
        ranked, _ = ranking.rank(search, question, limit=100, rules=rules, people=True, words=None)
        return [position for position, _ in ranked]

    plain = order(PLAIN.without(["updates"]))
    assert plain[0] == 1 and 22 not in plain  # the change matches nothing the question says
    assert order(PLAIN)[:2] == [22, 1]
