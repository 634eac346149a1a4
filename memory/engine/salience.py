"""What in a turn is worth keeping when room is short: a person's instructions, and the facts.

Two scores, both read from the words alone (no model, no corpus statistics, so a sentence scores the
same in every compaction and every session):

- `instruction_score`: how much a person's turn reads as a standing instruction — a constraint,
  a preference, a limit — rather than chatter or a one-off request. When the protected share of Y
  must move some of a person's turns out of the prompt view, the lowest scores leave first
  (docs/sessions.md, "A person's words in a bounded view").
- `fact_score`: how much a sentence carries that a later question could ask about — names,
  numbers, dates, places, plans, decisions, preferences — against greetings and chatter. The
  offline summariser keeps the highest-scoring parts of the turns it summarises, and among a
  person's turns of equal instruction score, the least factual leave the view first.
"""

from __future__ import annotations

import re

# Sentence ends: ., ! or ? followed by space and anything but a lower-case ASCII letter (a period
# inside "e.g. the" or "4.2" does not end one; a short cut elsewhere is harmless); 。！？ (which
# need no space after them); a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[^\W_a-z])|(?<=[。！？])\s*|\n+")
# A word: letters and digits of any script, with inner apostrophes, dots, hyphens ("Zürich", "4.2").
_WORD = re.compile(r"[^\W_](?:[\w'’&.-]*[^\W_])?")


def sentences(text: str) -> list[str]:
    """The sentences of `text`, in order, whitespace folded inside each."""
    parts = (" ".join(p.split()) for p in _SENTENCE_END.split(text))
    return [p for p in parts if p]


def words(text: str) -> list[str]:
    return _WORD.findall(text)


# --- instructions ----------------------------------------------------------------------------------

# A phrase that makes a sentence a standing instruction wherever it appears, with its weight.
_MARKERS: tuple[tuple[str, float], ...] = (
    # obligation and prohibition
    (r"must|mustn['’]?t|shall not|under no circumstances|no exceptions?|at all times", 3.0),
    (r"never|always|from now on|going forward|for the rest of|non-negotiable", 3.0),
    (r"not allowed|isn['’]t allowed|forbidden|prohibited|mandatory|required|requirement|strictly", 3.0),
    (r"make sure|ensure|keep in mind|do not forget|don['’]t forget|note that", 2.5),
    # a reminder, not a memory: "Remember to …", "Please remember …" ("I don't remember …" is not)
    (r"(?:^|please |and |also |just )remember|remember (?:to|that)", 2.5),
    # a restriction: "Spanish only.", "only ever", "cash only"
    (r"only(?=\s*[.!]?\s*$)|only ever|nothing but", 2.5),
    (r"should(?:n['’]t| not)?|ought to|need(?:s)? to|ha(?:ve|s) to|under any", 2.0),
    # preferences
    (r"prefer(?:s|red|ably)?|i['’]d rather|i would rather|i hate it when|i don['’]t want|i do not want", 2.5),
    # limits, deadlines, fixed facts
    (r"no later than|by the end of|at most|at least|no more than", 2.5),
    # a budget or a deadline named is a limit when it comes with an amount or a date
    (r"deadline|due (?:by|on|date)|budget", 1.5),
    (
        r"not more than|maximum|minimum|max(?:imum)? of|limit(?:ed)? to|cap(?:ped)? at|fixed at|is fixed|is final",
        2.5,
    ),
    # things not to touch
    (
        r"off[ -]limits|hands off|leave (?:\w+ ){0,3}alone|do(?:n['’]t| not) (?:touch|change|modify|edit|delete)",
        3.0,
    ),
    # health and diet: a constraint that is also a safety matter
    (r"allerg(?:y|ies|ic)|intoleran(?:t|ce)|vegetarian|vegan|gluten|kosher|halal|diabetic", 3.0),
    (r"rule|constraint|policy|convention|standard", 1.5),
)
_MARKER = [(re.compile(rf"\b(?:{pattern})\b", re.IGNORECASE), weight) for pattern, weight in _MARKERS]
# "Don't …" / "Do not …" with no one before it is a prohibition ("Whatever you do, don't push");
# after a subject ("I don't know", "they do not") it is not, nor are the usual reassurances.
_PROHIBITION = re.compile(
    r"(?:^|[,;:]\s*|\b(?:please|and|also|just|but|so)\s+)(?:don['’]t|do not)\s+(?!worry|mention|be sorry|apologi[sz]e)\w",
    re.IGNORECASE,
)
# A limit with a figure ("under 200 words", "over $300") or a date to meet ("by 30 June").
_LIMIT = re.compile(
    r"\b(?:under|below|within|over|above|less than|more than|fewer than|up to|no more than)\s+[$€£]?\d"
    r"|\bby (?:the end of|\d{1,2}(?:st|nd|rd|th)? [A-Z][a-z]+|(?:January|February|March|April|May|June|July|"
    r"August|September|October|November|December) \d|monday|tuesday|wednesday|thursday|friday|tomorrow|"
    r"next week|end of (?:day|week|month))",
    re.IGNORECASE,
)
# Words that widen an instruction's scope ("in every document", "for all vendors").
_SCOPE = re.compile(
    r"\b(?:every|all|any|each|anything|everything|nothing|none|whenever|only)\b", re.IGNORECASE
)
# A figure starts only where a run of digits starts, and is read for at most 24 characters: on a
# run of 10^5 digits an unanchored, unbounded `\d[\d,.]*` tries every digit to the run's end.
_AMOUNT = re.compile(
    r"[$€£¥]\s?\d|(?<![\d,.])\d[\d,.]{0,24}\s?(?:%|percent|euros?|dollars?|pounds?|usd|eur|gbp|k\b|m\b)",
    re.IGNORECASE,
)

# Verbs that open an imperative sentence ("Use British spelling …", "Copy Priya on …").
_IMPERATIVE_VERBS = frozenset(
    """add address answer ask attach avoid back book bring call cancel cc change check choose cite
    clean commit confirm convert copy cut delete deploy describe document double-check drop email
    encrypt exclude explain file fill fix follow format give go handle hold include keep label leave
    let limit list log mark mention merge move name notify open order pay pick pin post put quote
    read record refer release remove rename reply report request reserve respect respond restart
    return review round run save schedule send set ship show sign skip sort spell split start stay
    stick stop store submit switch tag take tell test translate treat turn update upload use verify
    wait warn write""".split()
)
_OPENER = re.compile(
    r"^(?:(?:please|also|and|just|then|so|now|oh|ok|okay)[,]?\s+)*([A-Za-z-]+)", re.IGNORECASE
)


def _instruction(sentence: str) -> float:
    score = sum(weight for pattern, weight in _MARKER if pattern.search(sentence))
    if _PROHIBITION.search(sentence):
        score += 3.0
    if _LIMIT.search(sentence):
        score += 2.0
    opener = _OPENER.match(sentence)
    if opener and opener.group(1).lower() in _IMPERATIVE_VERBS:
        score += 1.5
    if score and _SCOPE.search(sentence):
        score += 1.0
    if score and _AMOUNT.search(sentence):
        score += 1.0
    if sentence.rstrip().endswith("?"):
        # A request phrased as a question is a one-off task, not a standing rule.
        score *= 0.3
    return score


def instruction_score(text: str) -> float:
    """How strongly the turn reads as a standing instruction: its most instruction-like sentence.

    Obligations and prohibitions (must, never, always, don't …), reminders (make sure, remember),
    preferences (prefer, I'd rather), limits and deadlines (budget, at most, due by, fixed at),
    things not to touch, allergies and diets weigh most; an imperative opening verb less; scope
    words (every, all) and amounts add to a sentence that already instructs; a question counts
    for little. 0 for plain chatter.
    """
    return max((_instruction(s) for s in sentences(text)), default=0.0)


def is_instruction(sentence: str) -> bool:
    """Whether one sentence reads as an instruction (a quote keeps such sentences whole)."""
    return _instruction(sentence) >= INSTRUCTION


# The score from which a sentence counts as an instruction: one strong marker, or an imperative
# verb with a scope word or an amount.
INSTRUCTION = 2.5


# --- facts -----------------------------------------------------------------------------------------

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_TIME_WORDS = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday yesterday tomorrow tonight today
    weekend week month year years months weeks days ago last next birthday anniversary""".split()
)
# What people do, decide, plan and like: the verbs of a fact someone might ask about later.
_FACT_WORDS = frozenset(
    """adopted applied attended bought booked built started finished joined moved married graduated
    visited travelled traveled went got won lost made painted wrote read learned learnt signed
    decided chose planning plan plans planned will going hope hoping want wants wanted start starting
    love loves loved favourite favorite prefer prefers enjoy enjoys hate hates allergic
    working work job career studying study degree class course volunteer volunteering
    named called family kids children son daughter wife husband partner friend pet dog cat
    because since means fixed failed passed broke caused found shipped released merged deployed
    decision agreed approved rejected chosen picked budget deadline due price cost costs paid""".split()
)
# Words that make a sentence chatter: greetings, thanks, reactions.
_CHATTER = re.compile(
    r"^(?:hey|hi|hello|wow|whoa|oh|ah|aw+|yay|yeah|yes|yep|sure|thanks|thank you|great|awesome|"
    r"amazing|cool|nice|lovely|congrats|congratulations|haha|lol|omg|good to|glad|sounds|that['’]s|"
    r"you['’]re|so happy|so glad|take care|bye|see you|i['’]m so)\b",
    re.IGNORECASE,
)
_STOP = frozenset(
    """a an and are as at be been but by did do does for from had has have he her him his how i if in
    into is it its me my of on or our she so than that the their them then there these they this to
    was we were what when where which who whom why will with would you your i'm it's that's you're
    just really very too also not no yes can could should about all any some one like get got am
    oh okay ok well much many more most such own same other""".split()
)


def content_words(text: str) -> frozenset[str]:
    """The words of `text` that say something (lower case, stop words out)."""
    return frozenset(w.lower() for w in words(text) if w.lower() not in _STOP)


def fact_score(sentence: str, people: frozenset[str] = frozenset()) -> float:
    """How much a sentence carries that could be asked about later, from its words alone.

    Proper nouns (capitalised words not opening the sentence), numbers and times weigh most, then
    the verbs of doing, deciding, planning and liking, then long content words; a question, a
    greeting or a reaction counts for much less. 0 for a sentence of stop words. `people` (lower
    case) are the names of those talking: said to each other all the time, they tell nothing.
    """
    tokens = words(sentence)
    content = [w for w in tokens if w.lower() not in _STOP and w.lower() not in people]
    if not content:
        return 0.0
    score: float = 0.3 * len(content) ** 0.5
    for i, word in enumerate(tokens):
        lower = word.lower()
        if lower in _STOP or lower in people:
            continue
        if any(c.isdigit() for c in word):
            score += 1.5
        elif lower in _MONTHS or lower in _TIME_WORDS:
            score += 1.0
        elif word[0].isupper() and i > 0:
            score += 1.5
        if lower in _FACT_WORDS:
            score += 0.8
        elif len(word) >= 7:
            score += 0.3
    if sentence.rstrip().endswith("?"):
        score *= 0.35
    if _CHATTER.match(sentence):
        score *= 0.5
    return score


# --- decisions ------------------------------------------------------------------------------------

# A turn that states or accepts a choice: "decision made: X", "let's go with X", "I'd lean to X",
# "X instead of Y", "Agreed, go with your first option", "Fine by me".
_DECISION = re.compile(
    r"\b(?:decided|decision|settled? on|let['’]s (?:go with|use|do|stick with)|go(?:ing)? with|"
    r"we['’]ll (?:go with|use|stick with)|lean(?:ing)? (?:to|towards)|options?|instead of|rather than|"
    r"agreed|fine by me|sounds good|the plan is|opt(?:ed)? for|chose|chosen|picked)\b",
    re.IGNORECASE,
)


def reads_as_decision(text: str) -> bool:
    """Whether a turn states, proposes or accepts a choice."""
    return _DECISION.search(text) is not None


# --- updates --------------------------------------------------------------------------------------

# A turn that changes or corrects something said before: "Correction: it's due March 14", "They
# pushed the go-live to the 14th", "Scratch the 8080 idea, we're on 8443", "Not Tuesday — Wednesday",
# "The review is now on Thursday", "the airline has moved BA 482 to 18:40". Plain "now" and "update"
# are left out: "I'm now at the gym", "I'll update the README" change nothing said before.
_UPDATE = re.compile(
    r"\b(?:correction|corrected|actually|i meant|scratch (?:that|the)|change of plans?|"
    r"instead|no longer|not any ?more|(?:is|are|['’]s) now|rather than|my mistake|my bad|typo|"
    r"(?:was|is|that['’]s|had (?:it|that)|got (?:it|that)) wrong|revised|updated?:|update (?:from|on)|"
    r"from now on|going forward|in the end|make that|amended|changed from|previously|"
    r"(?:is|are|being) (?:retired|decommissioned|deprecated)|replaced by)\b"
    # "moved the review to", "has moved flight BA 482 to", "cut the budget to": a verb of change,
    # then its new value within a few words ("change" as a verb: "a nice change to my routine" is not).
    r"|\b(?:changed|(?<!a )(?<!the )(?<!nice )(?<!good )(?<!big )(?<!such )(?<!welcome )change|moved?|moving|pushed|pushing|bump(?:ed|s)?|shifted|switched|rescheduled|"
    r"postponed|delayed|brought forward|renamed|cut|raised|lowered|reduced|increased|extended)\b"
    r"(?:[^.!?\n]|\.(?=\w)){0,40}?\b(?:to|until|till)\b"
    r"|\b(?:is|are|was|were|has been|have been) (?:cancell?ed|changed|replaced)\b"
    # "(was 8:30 pm)", "now departs at 07:45", "the new host is …", "No, it's Friday".
    r"|\(was\b|\bnow (?:departs|leaves|starts|begins|lands|arrives|opens|closes|runs|lives|costs)\b"
    r"|\bnew \w+ is\b|\bno,\s*it['’]?s\b"
    # "Not Tuesday — Wednesday", "No — not that bucket", "not 8080, use 8443" (not "not sure, but").
    r"|\bno\s*[—–-]+\s*not\b"
    r"|\bnot\b(?! sure)[^.!?\n]{1,40}?(?:—|–|--| - )"
    r"|\bnot\b(?! sure)[^.!?\n]{1,40}?,\s*(?:but|it['’]?s|it is|use|make it|we['’]re)\b"
    # "is 12 Orchard Mews, not The Lamplighter", "9 nights in Dublin, not Reykjavik" (a name or a
    # number after the "not": "fine, not bad" says nothing of a value).
    r"|,\s*not\s+(?:(?-i:[A-Z0-9])|the\b)"
    # "The table is 9 pm now.", "it's Zanele now;" — not "for now", "right now" or "back now".
    r"|\b(?:is|are|['’]s|['’]re)\s+(?!(?:for|right|just|back)\b)[^.!?\n;,]{1,25}?\s+(?<!right\s)now\s*(?:[.!;]|$)"
    # "You've got the old value for …", "Please fix your notes."
    r"|\bthe old (?:value|number|figure|date|time|address|version|venue|price|size)\b"
    r"|\b(?:fix|update|correct)\s+(?:your|the)\s+(?:notes?|records?|calendar|entry|list)\b",
    re.IGNORECASE,
)


def reads_as_update(text: str) -> bool:
    """Whether a turn changes or corrects something said before."""
    return _UPDATE.search(text) is not None
