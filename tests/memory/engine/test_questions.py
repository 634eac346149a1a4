"""What a question says (memory/engine/questions.py): the times it names, the speakers it names
and asks about, and the question in the first person of the speaker it names."""

from __future__ import annotations


def test_named_times_reads_months_and_years_and_not_the_verb_may():
    from datetime import datetime, timedelta, timezone

    from memory.engine.questions import in_named_time, named_times

    assert named_times("What did Nate share in November 2022?") == [(2022, 11)]
    assert named_times("What did they discuss on 7 July, 2023?") == [(2023, 7)]
    assert named_times("What charity event did John organize recently in 2024?") == [(2024, None)]
    assert named_times("Where did she go last May?") == [(None, 5)]
    assert named_times("What may Melanie do next?") == []
    assert named_times("Where does Caroline live?") == []
    # The turn's own local time decides: 23:30 on 30 November at UTC-5 is 1 December in UTC.
    late = datetime(2022, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert in_named_time(late, [(2022, 11)])
    assert not in_named_time(late, [(2022, 12)])
    assert in_named_time(late, [(None, 11)]) and in_named_time(late, [(2022, None)])
    assert not in_named_time(None, [(2022, 11)])


def test_a_named_day_names_its_month_and_year_together():
    from memory.engine.questions import named_times

    # Not (None, 10) and, apart, (2023, None): any October, or anything in 2023.
    assert named_times("What painting did Melanie show on October 13, 2023?") == [(2023, 10)]
    assert named_times("What did they discuss on the 7th of July 2023?") == [(2023, 7)]
    assert named_times("Where was John between August 11 and August 15 2023?") == [(None, 8), (2023, 8)]
    assert named_times("Who did Maria have dinner with on May 3?") == [(None, 5)]
    assert named_times("These 3 may fail again") == []


def test_a_question_naming_a_speaker_is_put_in_their_own_first_person():
    from memory.engine.questions import first_person

    assert first_person("What does Melanie do to destress?", "Melanie") == "What do I do to destress?"
    assert (
        first_person("What is Caroline's relationship status?", "Caroline")
        == "What is my relationship status?"
    )
    assert first_person("What do Melanie’s kids like?", "Melanie") == "What do my kids like?"
    assert first_person("What did James' dog eat?", "James") == "What did my dog eat?"
    assert (
        first_person("Where has Melanie camped with her family?", "Melanie")
        == "Where have I camped with my family?"
    )
    assert (
        first_person("Would Caroline pursue it if she is moved?", "Caroline")
        == "Would I pursue it if I am moved?"
    )
    assert first_person("What did Nate give himself?", "Nate") == "What did I give myself?"
    # The verb keeps its capital.
    assert first_person("Does Melanie like hiking? Has she?", "Melanie") == "Do I like hiking? Have I?"


def test_only_the_speakers_name_as_written_is_rewritten():
    from memory.engine.questions import first_person

    assert first_person("What does Melanies do?", "Melanie") is None
    assert first_person("Where does Caroline live?", "Melanie") is None
    # A name is a name as the speaker writes it, and not after a determiner.
    assert first_person("Where will the party be?", "Will") is None
    assert first_person("What did the user say about her deadline?", "user") is None
    # A name with regex characters is read literally.
    assert first_person("What did bot.v2 answer?", "bot.v2") == "What did I answer?"
    assert first_person("What did botxv2 answer?", "bot.v2") is None
    # "ſ" matches "s" case-insensitively in Unicode; the verbs are matched in ASCII only.
    assert first_person("Where waſ Melanie?", "Melanie") == "Where waſ I?"
    # With another speaker named, "her" may be theirs: pronouns=False leaves them.
    assert (
        first_person("What did Caroline give Melanie for her birthday?", "Caroline", pronouns=False)
        == "What did I give Melanie for her birthday?"
    )


def test_a_name_is_read_as_written_unless_the_question_has_no_capitals():
    from memory.engine.questions import names_speaker

    assert names_speaker("What did Will say?", "Will")
    assert not names_speaker("Where will Ana go?", "Will")
    # All lower case says nothing by its case: the name counts in any case, unless it is a common word.
    assert names_speaker("what did melanie paint?", "Melanie")
    assert not names_speaker("where will we meet?", "Will")
    assert not names_speaker("What did melanie paint?", "Melanie")
    # "that" before a name is most often a conjunction; "the" is a determiner.
    assert names_speaker("Is it likely that Nate has friends?", "Nate")
    assert not names_speaker("What did the user say?", "user")
    assert names_speaker("What did Dr Lee prescribe?", "Dr Lee")
    # Case tells nothing about a name stored without capitals, nor in a question all in capitals.
    assert names_speaker("What did Alice say?", "alice")
    assert names_speaker("WHAT DID MELANIE SAY ABOUT ANN'S DOG?", "Melanie")
    assert names_speaker("WHAT DID MELANIE SAY ABOUT ANN'S DOG?", "Ann")
    assert not names_speaker("", "Ann") and not names_speaker("Ann?", "")


def test_of_two_speakers_named_the_question_is_about_its_subject_unless_they_are_joined():
    from memory.engine.questions import speakers_asked_about

    two = {"Joanna", "Nate"}
    assert speakers_asked_about("What did Joanna plan to do with the recipe Nate promised?", two) == {
        "Joanna"
    }
    assert speakers_asked_about("What nickname does Nate use for Joanna?", two) == {"Nate"}
    assert speakers_asked_about("What do Joanna and Nate like?", two) == two
    assert speakers_asked_about("Would Joanna or Nate win?", two) == two
    assert speakers_asked_about("Joanna, Nate: who cooks?", two) == two
    assert speakers_asked_about("What do Joanna & Nate share?", two) == two
    assert speakers_asked_about("Did Joanna go hiking with Nate both times?", two) == two
    assert speakers_asked_about("What did Joanna say?", {"Joanna"}) == {"Joanna"}
    # One name inside the other's mention: the longer is meant, on every run.
    assert speakers_asked_about("What did Ann Lee tell Bob?", {"Ann", "Ann Lee"}) == {"Ann Lee"}
    three = {"Joanna", "Nate", "Tim"}
    assert speakers_asked_about("What did Joanna tell Nate about Tim?", three) == three
