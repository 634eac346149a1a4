from __future__ import annotations

import pytest

from memory.engine.salience import INSTRUCTION, fact_score, instruction_score, sentences

STANDING = [
    "I'm allergic to shellfish, so leave it out of every recipe.",
    "Whatever you do, don't push to the main branch directly.",
    "Keep each reply under 200 words.",
    "Our hosting bill can't go over $300 a month.",
    "I prefer metric units in all reports.",
    "The contract has to be signed by 30 June.",
    "Please make sure Dana is in copy on anything about hiring.",
    "Leave the vendor folder alone; it's generated.",
    "Never deploy to production on a Friday.",
    "From now on, answer in Portuguese.",
]
ORDINARY = [
    "Please send me the latest numbers.",
    "Can you check the logs?",
    "Thanks, that works.",
    "What did the client say?",
    "Let's look at the dashboard tomorrow.",
    "I think we should try the second option.",
    "Go ahead and merge it.",
    "Run the tests again, please.",
    "The meeting moved to 3pm.",
    "Don't worry about the typo.",
    "I don't know what happened there.",
    "Remember the demo last week? It went well.",
    "The build took over 20 minutes today.",
    "Could you make sure the numbers add up before you send them?",
]


@pytest.mark.parametrize("text", STANDING)
def test_a_standing_instruction_scores_as_one(text):
    assert instruction_score(text) >= INSTRUCTION


@pytest.mark.parametrize("text", ORDINARY)
def test_chatter_and_one_off_requests_score_below_an_instruction(text):
    assert instruction_score(text) < INSTRUCTION


def test_a_turn_scores_its_most_instruction_like_sentence():
    turn = "Thanks for the update. One more thing: never email the client directly. What's next?"

    assert instruction_score(turn) == instruction_score("One more thing: never email the client directly.")
    assert instruction_score(turn) >= INSTRUCTION


def test_facts_outscore_greetings_and_reactions():
    assert fact_score("I adopted a grey cat called Miso on 3 March.") > 3 * fact_score("Wow, that's so cool!")
    assert fact_score("Hey, how are you doing?") < fact_score("We moved to Lisbon last year.")


def test_the_speakers_names_tell_nothing():
    said = "Agreed, Caroline."

    assert fact_score(said, frozenset({"caroline"})) < fact_score(said)


def test_sentences_split_at_ends_and_line_breaks_but_not_inside_numbers():
    assert sentences("Version 4.2 is out. It fixed   the bug!\nNext: docs") == [
        "Version 4.2 is out.",
        "It fixed the bug!",
        "Next: docs",
    ]
