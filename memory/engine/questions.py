"""What a question says, the pure parts recall ranks by: the months and years it names, the speakers
it names and which of them it asks about, and the question as that speaker would put it to
themselves (first person). No I/O, no Django: memory/recall.py reads these from a question and
weighs them (docs/recall.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from functools import lru_cache, partial

from .retrieval import STOPWORDS, query_terms

_MONTHS = "january february march april may june july august september october november december".split()
_NAMED_TIME = re.compile(
    r"\b(?:(" + "|".join(_MONTHS) + r")\b(?:\s*,?\s*((?:19|20)\d\d)\b)?|((?:19|20)\d\d)\b)",
    re.IGNORECASE,
)
# "may" alone is nearly always the verb; it names the month with a year or after one of these.
_MAY_THE_MONTH = re.compile(r"\b(?:in|last|of|since|early|late|mid)\s+$", re.IGNORECASE)
_MAY_THE_DAY = re.compile(r"\b(?:on|of|by|since|before|after|until|from|the)\s+$", re.IGNORECASE)


_MONTH = "(" + "|".join(_MONTHS) + ")"
_YEAR = r"(?:\s*,?\s*((?:19|20)\d\d)\b)?"
# "7 July, 2023", "7th of July 2023", "July 7, 2023", "July 7th": a day of a month, its year if named
# (read whole, so that "October 13, 2023" names October 2023, not October and, apart, 2023).
_NAMED_DAY = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b{_YEAR}|\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?\b{_YEAR}",
    re.IGNORECASE,
)


def _days(query: str) -> list[tuple[re.Match[str], tuple[int | None, int, int]]]:
    found = []
    for m in _NAMED_DAY.finditer(query):
        day, month, year, month2, day2, year2 = m.groups()
        day, month, year = (day, month, year) if day else (day2, month2, year2)
        if month.lower() == "may" and not year and not _MAY_THE_DAY.search(query[: m.start()]):
            continue  # "these 3 may fail"
        if 1 <= int(day) <= 31:
            found.append((m, (int(year) if year else None, _MONTHS.index(month.lower()) + 1, int(day))))
    return found


def named_times(query: str) -> list[tuple[int | None, int | None]]:
    """The months and years a question names, as (year, month), either None when not named:
    "in November 2022" → (2022, 11), "on 7 July, 2023" and "on October 13, 2023" → (2023, 7) and
    (2023, 10), "in 2024" → (2024, None), "last May" → (None, 5); "what may she do" names nothing."""
    found: list[tuple[int | None, int | None]] = []
    rest = query
    for m, (year, month, _) in _days(query):
        found.append((year, month))
        rest = rest[: m.start()] + " " * (m.end() - m.start()) + rest[m.end() :]
    for m in _NAMED_TIME.finditer(rest):
        month_name, year_named, bare_year = m.groups()
        if bare_year:
            found.append((int(bare_year), None))
            continue
        if month_name.lower() == "may" and not year_named and not _MAY_THE_MONTH.search(rest[: m.start()]):
            continue
        found.append((int(year_named) if year_named else None, _MONTHS.index(month_name.lower()) + 1))
    return found


def in_named_time(when: datetime | None, times: Sequence[tuple[int | None, int | None]]) -> bool:
    """Whether `when` (the turn's own local time) falls in one of the named months or years."""
    if when is None:
        return False
    return any((y is None or when.year == y) and (m is None or when.month == m) for y, m in times)


_FIRST_PERSON_VERB = {"does": "do", "has": "have", "is": "am", "was": "was"}
# ASCII: under IGNORECASE alone, "ſ" (long s) matches "s", and "waſ" is no key of the table above.
_FIRST_PERSON_WORDS = (
    (re.compile(r"\b(?:she|he)\b(?!['’])", re.IGNORECASE | re.ASCII), "I"),
    (re.compile(r"\b(?:her|his)\b", re.IGNORECASE | re.ASCII), "my"),
    (re.compile(r"\b(?:herself|himself)\b", re.IGNORECASE | re.ASCII), "myself"),
)
# "does I" (a question) and "I does" (a clause) agree with "I".
_THIRD_PERSON_VERB = re.compile(
    r"\b(?:(does|has|is|was)(\s+I)\b|(I\s+)(does|has|is|was)\b)", re.IGNORECASE | re.ASCII
)
# "the user", "a will": the name used as a word, not as the speaker's name. Not "that" or "this":
# more often a conjunction or pronoun before a name ("Is it likely that Nate has…") than a determiner.
_DETERMINED = re.compile(r"\b(?:the|a|an|my|your|our|their)\s+$", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _name_words(name: str) -> tuple[str, ...]:
    # A session's names are the same few from one recall to the next: cut into words once.
    return tuple(query_terms(name, drop_stopwords=False))


def speakers_named(query: str, speakers: Iterable[str], *, people: bool) -> set[str]:
    """Of `speakers` (the items' names), those the question names: "What did Melanie paint?" names
    Melanie. Every word of the name must be among the question's, in any case; for `people`
    (a conversation's speakers) also as `names_speaker` reads them — "Where will Ana go?" does not
    name a speaker Will, nor "What did the user say?" a speaker "user". Tools' and agents' names
    ("pytest", "bash") are named by any word of the question that is one."""
    words = set(query_terms(query, drop_stopwords=False))
    # The cheap test, for every name.
    found = {n for n in speakers if _name_words(n) and words.issuperset(_name_words(n))}
    return {n for n in found if names_speaker(query, n)} if people else found


def names_speaker(query: str, speaker: str) -> bool:
    """Whether `query` names the speaker `speaker`, not after a determiner ("the user").

    Where case can tell — a name written with a capital, in a question that mixes cases — the
    name must be written as it is ("will" is not the speaker Will, in "Where will Ana go?");
    elsewhere (a speaker "alice", a question all in lower or upper case) it is matched in any
    case, unless it is also a common word ("will", "so")."""
    return bool(_naming(query, speaker))


# How far before a name a determiner is looked for: "their" and a few spaces. Bounded, so that a
# long question naming someone many times costs one short scan per mention.
_DETERMINER_REACH = 16


def _naming(query: str, speaker: str) -> list[re.Match[str]]:
    """Where `query` names `speaker` (names_speaker's rules), first mention first."""
    if not speaker:
        return []
    cased = speaker != speaker.lower() and query != query.lower() and query != query.upper()
    if cased:
        if speaker not in query:  # the common case, without a pattern
            return []
        flags = 0
    else:
        if speaker.casefold() in STOPWORDS or speaker.casefold() not in query.casefold():
            return []
        flags = re.IGNORECASE
    name = re.compile(rf"(?<![\w'’]){re.escape(speaker)}(?:['’][sS]?)?(?![\w'’])", flags)
    return [
        m
        for m in name.finditer(query)
        if not _DETERMINED.search(query[max(0, m.start() - _DETERMINER_REACH) : m.start()])
    ]


# Two names joined ("Jon and Gina", "Jon or Gina", "Jon, Gina", "Jon & Gina"), or a question
# about both ("Did Jon and Gina both…"): the question is about each of them.
_JOINED = re.compile(r"\b(?:and|or)\b|[,&]", re.IGNORECASE)
_BOTH = re.compile(r"\bboth\b", re.IGNORECASE)


def speakers_asked_about(query: str, named: AbstractSet[str]) -> set[str]:
    """Of the speakers a question names (names_speaker), those it asks about: of two that are not
    joined by "and", "or", "&" or a comma, in a question without "both", the one named first —
    the subject ("What did Joanna plan to do with the recipe Nate promised to share?" asks about
    Joanna; Nate is what she was told about). Otherwise all of them.

    Where one name is part of the other's mention ("Ann" in "Ann Lee"), the longer is the one meant.
    """
    if len(named) != 2:
        return set(named)
    where = {}
    for speaker in named:
        found = _naming(query, speaker)
        if found:
            where[speaker] = found[0]
    if len(where) != 2:
        return set(named)
    (first, at), (_, then) = sorted(where.items(), key=lambda kv: (kv[1].start(), -kv[1].end(), kv[0]))
    if then.start() < at.end():
        return {first}
    if _JOINED.search(query[at.end() : then.start()]) or _BOTH.search(query):
        return set(named)
    return {first}


def first_person(query: str, speaker: str, *, pronouns: bool = True) -> str | None:
    """The question as the speaker it names would put it to themselves: "What does Melanie do to
    destress with her kids?" → "What do I do to destress with my kids?". None when the question
    does not name `speaker` (`names_speaker`).

    People speak of themselves in the first person ("I'm off to go swimming"), so a question that
    names them in the third person finds, by meaning, the turns that talk *to* or *about* them
    ("Melanie, that's great!") before their own. She, he, her, his, herself and himself are read as
    the speaker's when `pronouns`: in a question naming one speaker "her" is most often theirs; in
    one that names another too ("What did Caroline give Melanie for her birthday?") it may be the
    other's, and is left as it is.
    """
    found = _naming(query, speaker)
    if not found:
        return None
    parts, at = [], 0
    for m in found:
        parts += [query[at : m.start()], "my" if m.group().endswith(("'s", "’s", "'", "’")) else "I"]
        at = m.end()
    rewritten = "".join([*parts, query[at:]])
    for pattern, word in _FIRST_PERSON_WORDS if pronouns else ():
        rewritten = pattern.sub(partial(_cased_as, word), rewritten)

    def agree(m: re.Match[str]) -> str:
        if m.group(1):
            return _cased(_FIRST_PERSON_VERB[m.group(1).lower()], m.group(1)) + m.group(2)
        return m.group(3) + _FIRST_PERSON_VERB[m.group(4).lower()]

    return _THIRD_PERSON_VERB.sub(agree, rewritten)


def _cased_as(word: str, m: re.Match[str]) -> str:
    return _cased(word, m.group())


def _cased(word: str, like: str) -> str:
    """`word` capitalised as `like` is ("Does" → "Do"); "I" stays "I"."""
    return word[0].upper() + word[1:] if like[:1].isupper() else word


_I = re.compile(r"\bI\b")


def asked_as_the_person(query: str) -> bool:
    """Whether the question says "I" ("What did I ask you to keep out of the project?"): asked as
    the person the agent works for, about their own words. "me" and "my" alone do not say it
    ("What did you tell me about the cache?" asks about the agent's)."""
    return _I.search(query) is not None


# What a person says when asking about something they told the agent to do or not to do.
_TOLD = re.compile(
    r"\b(?:tell|told|ask|asked|say|said|want|wanted|prefer|preferred|instruct(?:ed)?|remind(?:ed)?)\b",
    re.IGNORECASE,
)


def asks_for_instructions(query: str) -> bool:
    """Whether the person asks what they told the agent ("Which library did I tell you to keep out
    of the project?", "What did I say I prefer for logging?"): it says "I" and a verb of telling,
    asking, wanting or preferring. "What did I break yesterday?" does not."""
    return asked_as_the_person(query) and _TOLD.search(query) is not None


# What a question says when it asks what was decided ("What did we decide about migrations?", "What
# did we settle on for background jobs?", "Which option did we go with?").
_DECIDED = re.compile(
    r"\b(?:decide[ds]?|decision|settle[ds]? on|agree[ds]? (?:on|to|about)|go with|went with|gone with|"
    r"land(?:ed)? on|opt(?:ed)? for|cho(?:ose|se|sen)|pick(?:ed)?)\b",
    re.IGNORECASE,
)


def asks_for_decision(query: str) -> bool:
    """Whether the question asks what was decided or chosen."""
    return _DECIDED.search(query) is not None
