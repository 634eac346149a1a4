"""The planted facts of the team channel set (team_channel.py) and their questions: 15 a session.

Categories (locomo.CATEGORIES): 12 attributed (what one person asked the agent to change, while
others asked for other changes to the same document), 11 who (the answer is the person who offered),
8 decision (a proposal and another person's agreement, or the agent's proposal and a yes), 1
multi-hop (everything one person asked the agent to set up; a plan and its outcome days later), 6
paraphrase, 2 temporal (the answer is the evidence turn's day), 7 first-person in the plural ("What
did we tell the agent…") and 4 single-hop. No question says "I": who asks in a shared channel is
unknown.
"""

from __future__ import annotations

import random

from memory.evaluation.generated import Fact
from memory.evaluation.team_channel_material import ASKS, CHANGES, Team, bot, clock, say, ticket, tool
from memory.evaluation.team_channel_material import WEEKDAYS as DAYS

# (question, the offer said outright, a call for a volunteer, a distractor offer by someone else)
OFFERS = [
    (
        "Who offered to take the on-call shift on {day}?",
        "I can take the on-call shift on {day}, my weekend's free anyway.",
        "Anyone able to take on-call on {day}? I've got a wedding.",
        "I'll cover {day2}'s on-call if it comes to that.",
    ),
    (
        "Who volunteered to write the postmortem for the {c} outage?",
        "I'll write up the postmortem for the {c} outage.",
        "We still need someone to own the postmortem for the {c} outage.",
        "I can draft the timeline for the {c2} incident.",
    ),
    (
        "Who said they would review the {c} pull request?",
        "I'll review the {c} PR after lunch.",
        "The {c} PR needs a second reviewer, any takers?",
        "I'll take a look at the {c2} PR later.",
    ),
    (
        "Who offered to demo the {c} at the all-hands?",
        "I can demo the {c} at Thursday's all-hands.",
        "Somebody should demo the {c} at the all-hands this week.",
        "I'm happy to show the {c2} at the next one.",
    ),
    (
        "Who said they would call {vendor} about the invoice?",
        "I'll ring {vendor} about the invoice tomorrow morning.",
        "{vendor} double-billed us again. Who wants to chase them about the invoice?",
        "I can chase {vendor2} about their renewal.",
    ),
    (
        "Who offered to sit on the interview panel on {day}?",
        "Put me down for the interview panel on {day}.",
        "The interview panel on {day} is one short, can someone join?",
        "I can do the panel on {day2} instead.",
    ),
    (
        "Who volunteered to organise the team lunch?",
        "I'll organise the team lunch, thinking {food}.",
        "Are we doing a team lunch this month? Needs an organiser.",
        "I'll book the room for the retro.",
    ),
]
YES = ["I'll take it.", "Me, I'll do it.", "I can do that one.", "Happy to, leave it with me."]
# (topic, the rejected option, the chosen option, why)
DECISIONS = [
    (
        "the staging database",
        "a managed Postgres on the small tier",
        "a nightly scrubbed snapshot of prod",
        "cost",
    ),
    ("the release day", "Fridays", "Tuesday mornings after standup", "nobody wants weekend fixes"),
    ("the flaky login test", "deleting it", "quarantining it behind a retry and filing a ticket", "coverage"),
    ("the retro format", "sailboat", "a silent write-up in the doc before we talk", "quieter people"),
    ("the error tracker", "moving to Rollbar", "staying on Sentry with sampling at 20%", "migration effort"),
    ("log retention", "90 days hot", "30 days hot and a year in cold storage", "the storage bill"),
    ("the meeting-free day", "Fridays", "Wednesdays", "mid-week focus"),
    ("the API versioning", "a version header", "v2 in the URL path", "caching"),
    ("code review", "two approvals for everything", "one approval, two for migrations", "speed"),
    ("the on-call handover", "a call every Monday", "a written handover posted here at 9 am", "time zones"),
    ("the team offsite", "a weekend in Lisbon", "a day at the Brockwell office with a long lunch", "budget"),
    ("the dependency updates", "updating by hand each sprint", "Renovate with grouped weekly PRs", "noise"),
]
AGREE = ["+1", "works for me", "agreed, let's do it", "+1 from me", "sounds good, go for it", "yep, ship it"]
DECIDE_Q = [
    "What did the team settle on for {topic}?",
    "What did we decide about {topic}?",
    "What was agreed for {topic}?",
]
SETUPS = [
    "a weekly reminder for the {meeting}",
    "an alert when the {metric} drops below {n}",
    "a dashboard for the {c}",
    "a nightly CI job for the {c} tests",
    "a shared calendar for the on-call rota",
    "a Friday digest of this channel",
    "a saved ticket filter for {prefix} bugs older than {n} days",
    "a staging copy of the {c}",
    "a bot that posts the daily deploy list",
]
# (the plan, the outcome's turn, the question, the plan's part of the answer, the outcome's part)
PLANS = [
    (
        "Plan for {day}: load test the {c} at {n}k requests a second before the launch.",
        "loadtest {c}: {n}000 rps for 10 min · p99 {m} ms · errors 0.0{k}%",
        "What load did {p} plan to put on the {c}, and what p99 did the test show?",
        "{n}k requests a second",
        "p99 {m} ms",
    ),
    (
        "Let's move the {c} to the new cluster on {day} night, I'll babysit it.",
        "The {c} move is done — {m} minutes of downtime, less than we feared.",
        "When was the {c} to move to the new cluster, and how much downtime did the move cost?",
        "on {day} night",
        "{m} minutes of downtime",
    ),
    (
        "Proposal: A/B test the {c} with the {variant} variant for a week.",
        "Experiment's in: the {variant} variant converted {k}.{n}% better, significant at 95%.",
        "Which variant did {p} want to test on the {c}, and how much better did it convert?",
        "the {variant} variant",
        "{k}.{n}% better",
    ),
    (
        "I'm going to try bumping the {c} worker pool to {n} threads to clear the backlog.",
        "Backlog on the {c} cleared overnight with the bigger pool; queue depth is down to {m}.",
        "How many threads did {p} give the {c} workers, and where did the queue depth end up?",
        "{n} threads",
        "down to {m}",
    ),
]
VARIANTS = ["green button", "short form", "social proof", "annual-first", "no-pricing"]
# (statement, question, answer): the question words the fact differently.
PARAPHRASES = [
    (
        "heads-up: the read replica is lagging {n} seconds behind at peak.",
        "How far behind did the copy of the database fall during the busiest hours?",
        "{n} seconds",
    ),
    (
        "FYI the TLS cert on {domain} lapses on {date}.",
        "When does the website's security certificate run out?",
        "{date}",
    ),
    (
        "{vendor} sent their renewal quote: {money} a year.",
        "How much does the supplier want for another twelve months?",
        "{money}",
    ),
    (
        "Code freeze starts {day} at noon, nothing merges after that.",
        "From when are changes no longer allowed to land?",
        "{day} at noon",
    ),
    ("{newhire} starts on {date}, laptop's ordered.", "When does the newest colleague join?", "{date}"),
    ("Offsite budget is {money} all in.", "How much can the team spend on the away day?", "{money}"),
    (
        "Our error budget for the quarter is down to {n}%.",
        "How much of the reliability allowance is left this quarter?",
        "{n}%",
    ),
    (
        "The office wifi password changed, it's {pw} now.",
        "What's the new network passphrase at work?",
        "{pw}",
    ),
    ("Standup moves to {time} from next week.", "What time is the daily morning sync now?", "{time}"),
    ("Visitor code for the car park is {code}.", "What do guests punch in to get into the garage?", "{code}"),
    (
        "the {c} pods got OOM-killed again, bumped the memory limit to {n}00Mi.",
        "How much RAM were those containers given after they kept crashing?",
        "{n}00Mi",
    ),
]
# (the event, the question): the answer is the day it was said.
EVENTS = [
    (
        "prod's unhappy — the {c} is throwing 502s for about a third of requests.",
        "When did {p} report the {c} throwing 502s?",
    ),
    (
        "signed the contract with {vendor} this morning, it's official.",
        "On what day did {p} sign the contract with {vendor}?",
    ),
    ("out sick today, ping me only if something is on fire.", "On which day was {p} off sick?"),
    (
        "heads-up, the {vendor} contract expires at the end of next month, we need to decide on renewal.",
        "When did {p} flag that the {vendor} contract is expiring?",
    ),
    ("{newhire}'s first day today, say hi!", "When did {newhire} start on the team?"),
    (
        "rolled back the {c} change, it was eating the retries.",
        "On what day did {p} roll back the {c} change?",
    ),
]
# (the instruction, the question, the answer)
WE = [
    (
        "@assistant never run {cmd} against production. Staging only, always.",
        "What did we tell the agent never to run against production?",
        "{cmd}",
    ),
    (
        "@assistant from now on post CI summaries in #{chan}, not here.",
        "Where did we ask the agent to post CI summaries?",
        "#{chan}",
    ),
    (
        "@assistant call the new feature flag {flag} please.",
        "What did we ask the agent to call the new feature flag?",
        "{flag}",
    ),
    (
        "@assistant always tag {other} on anything touching the {c}.",
        "Who did we ask the agent to tag on changes to the {c}?",
        "{other}",
    ),
    (
        "@assistant keep the standup summaries to {bullets} bullets max.",
        "How many bullets did we ask the agent to keep standup summaries to?",
        "{bullets} bullets",
    ),
]
COMMANDS = ["the cleanup script", "terraform destroy", "VACUUM FULL", "the backfill job", "db:reset"]


def _others(rng: random.Random, t: Team, k: int, but: tuple[str, ...] = ()) -> list[str]:
    return rng.sample([p for p in t.people if p not in but], k)


def attributed(rng: random.Random, t: Team, art: str, changes: list[str], asked: int) -> list[Fact]:
    """Asks by different people for different changes to one document, over two sittings; a
    question about each of the first `asked` people, the other people's asks its distractors."""
    people = _others(rng, t, len(changes))
    turns = []
    for who, ch in zip(people, changes, strict=True):
        ask = say(who, rng.choice(ASKS).format(art=art, ch=ch))
        turns.append(
            [
                ask,
                bot(
                    rng.choice(
                        [
                            "Done, the {art} is updated.",
                            "Updated the {art}.",
                            "Done — have a look at the {art}.",
                        ]
                    ).format(art=art)
                ),
            ]
        )
    split = rng.randint(1, len(turns) - 1)
    parts = [[x for pair in turns[:split] for x in pair], [x for pair in turns[split:] for x in pair]]
    rng.shuffle(parts)
    facts = []
    for k in range(asked):
        q = rng.choice(
            ["What did {p} ask the agent to change in the {art}?", "Which edit to the {art} did {p} ask for?"]
        )
        others = [pair[0] for j, pair in enumerate(turns) if j != k]
        text = q.format(p=people[k], art=art)
        facts.append(Fact(12, text, changes[k], parts if k == 0 else [], [turns[k][0]], others))
    return facts


def who(rng: random.Random, t: Team, row: tuple[str, str, str, str], v: dict[str, str]) -> Fact:
    question, offer, call, other = (s.format(**v) for s in row)
    offerer, caller, rival = _others(rng, t, 3)
    if rng.random() < 0.5:
        said = [say(offerer, offer)]
    else:
        said = [say(caller, call), say(offerer, rng.choice(YES))]
    evidence = list(said)
    said.append(say(caller, rng.choice(["thanks!", "legend, thank you", "🙏"])))
    rivals = [say(rival, other)]
    parts = [said, rivals]
    rng.shuffle(parts)
    return Fact(11, question, offerer, parts, evidence, rivals)


def decision(rng: random.Random, t: Team, row: tuple[str, str, str, str]) -> Fact:
    topic, rejected, chosen, why = row
    question = rng.choice(DECIDE_Q).format(topic=topic)
    a, b, c = _others(rng, t, 3)
    if rng.random() < 0.5:
        proposal = say(b, f"Not keen on {rejected}, {why} is the problem. What about {chosen}?")
        yes = say(c, rng.choice(AGREE))
        part = [say(a, f"For {topic}, should we go with {rejected}?"), proposal, yes]
    else:
        proposal = bot(f"For {topic} I'd suggest {chosen} rather than {rejected}: better on {why}.")
        yes = say(c, rng.choice(AGREE))
        part = [say(a, f"@assistant what would you do about {topic}?"), proposal, yes]
    return Fact(8, question, chosen, [part], [proposal, yes])


def setups(rng: random.Random, t: Team, v: dict[str, str], count: int) -> Fact:
    person, other = _others(rng, t, 2)
    things = [s.format(**{**v, "n": str(rng.randint(2, 9) * 5)}) for s in rng.sample(SETUPS, count + 1)]
    asks = [say(person, f"@assistant can you set up {thing}?") for thing in things[:count]]
    parts = [[ask, bot(f"Set up {thing}.")] for ask, thing in zip(asks, things, strict=False)]
    parts[-1] += [
        say(other, f"@assistant and {things[-1]} for me, while you're at it."),
        bot("Done, both in place."),
    ]
    question = f"What did {person} ask the agent to set up?"
    return Fact(1, question, "; ".join(things[:count]), parts, asks)


def plan(rng: random.Random, t: Team, row: tuple[str, ...], v: dict[str, str]) -> Fact:
    person, reporter = _others(rng, t, 2)
    values = {
        **v,
        "p": person,
        "n": str(rng.randint(2, 9)),
        "m": str(rng.randint(12, 95)),
        "k": str(rng.randint(1, 9)),
    }
    values["variant"] = rng.choice(VARIANTS)
    said, outcome, question, first, second = (s.format(**values) for s in row)
    start = say(person, said)
    result = tool("loadtest", outcome) if outcome.startswith("loadtest") else say(reporter, outcome)
    parts = [
        [start, say(reporter, rng.choice(["nice, shout if you need a hand", "+1", "go for it"]))],
        [result],
    ]
    return Fact(1, question, f"{first}; {second}", parts, [start, result])


def paraphrase(rng: random.Random, t: Team, row: tuple[str, str, str], v: dict[str, str]) -> Fact:
    statement, question, answer = (s.format(**v) for s in row)
    person = rng.choice(t.people)
    turn = say(person, statement)
    return Fact(
        6,
        question,
        answer,
        [
            [
                turn,
                say(rng.choice([p for p in t.people if p != person]), rng.choice(["noted", "thanks", "ok!"])),
            ]
        ],
        [turn],
    )


def temporal(rng: random.Random, t: Team, row: tuple[str, str], v: dict[str, str]) -> Fact:
    statement, question = row
    person = rng.choice(t.people)
    turn = say(person, statement.format(**v))
    return Fact(
        2,
        question.format(**v, p=person),
        "",
        [[turn, bot(rng.choice(["Noted.", "Logged it.", "Thanks, noted in the log."]))]],
        [turn],
    )


def we(rng: random.Random, t: Team, row: tuple[str, str, str], v: dict[str, str]) -> Fact:
    statement, question, answer = (s.format(**v) for s in row)
    turn = say(rng.choice([p for p in t.people if p != v["other"]]), statement)
    return Fact(7, question, answer, [[turn, bot("Understood, I'll stick to that.")]], [turn])


def single(rng: random.Random, t: Team, v: dict[str, str]) -> Fact:
    person = rng.choice(t.people)
    if rng.random() < 0.5:
        number = ticket(rng, t)
        bug = f"the {v['c']} {rng.choice(['drops events on retry', 'double-sends emails', 'times out on large accounts'])}"
        made = tool(
            "tickets",
            f"tickets.create(project={t.kind['prefix']})\nCreated {number}: {bug}\nassignee: unassigned · priority: P2 · labels: {v['c'].replace(' ', '-')}, bug",
        )
        part = [say(person, f"@assistant file a bug: {bug}."), made, bot(f"Filed as {number}.")]
        return Fact(4, f"What ticket number was the bug about {bug} filed under?", number, [part], [made])
    port = str(rng.randint(3000, 9999))
    url = f"https://{v['c'].replace(' ', '-')}.staging.{t.domain}:{port}"
    turn = say(person, f"for anyone wondering, the {v['c']} on staging is at {url}")
    return Fact(4, f"Which port is the {v['c']} on staging served from?", port, [[turn]], [turn])


def values(rng: random.Random, t: Team) -> dict[str, str]:
    c = t.components
    return {
        "c": c[0],
        "c2": c[1],
        "meeting": t.kind["meeting"],
        "metric": t.kind["metric"],
        "prefix": t.kind["prefix"],
        "day": rng.choice(DAYS),
        "day2": "",
        "vendor": t.vendors[0],
        "vendor2": t.vendors[1],
        "food": rng.choice(["Dishoom", "the taco truck", "Franco's"]),
        "domain": t.domain,
        "date": f"{rng.randint(2, 28)} {rng.choice(['March', 'April', 'June', 'September', 'November'])}",
        "money": f"${rng.randint(11, 98)},{rng.randint(1, 9)}00",
        "newhire": rng.choice(["Marisol", "Ezra", "Thandi", "Ruairi", "Ines-Maria", "Kwame"]),
        "pw": f"{rng.choice(['otter', 'quince', 'maple', 'heron'])}-{rng.randint(100, 999)}-{rng.choice(['blue', 'fig', 'kite'])}",
        "time": clock(rng, 9, 10),
        "code": str(rng.randint(1000, 9999)),
        "n": str(rng.randint(12, 48)),
        "bullets": rng.choice(["three", "four", "five", "six"]),
        "cmd": rng.choice(COMMANDS),
        "chan": f"{t.kind['prefix'].lower()}-{rng.choice(['ci', 'builds', 'robots'])}",
        "flag": f"{c[2].replace(' ', '_')}_v{rng.randint(2, 4)}",
        "other": t.people[-1],
    }


def facts_for(rng: random.Random, t: Team) -> list[Fact]:
    """15 facts: 3 attributed, 2 who, 2 decision, 2 multi-hop, 2 paraphrase, 2 temporal, 1 "we",
    1 single-hop, each with its own values; the second component, vendor and day feed distractors."""
    v = values(rng, t)
    v["day2"] = rng.choice([d for d in DAYS if d != v["day"]])
    facts: list[Fact] = []
    changes = rng.sample(CHANGES, 5)
    changes = [ch.format(**v) for ch in changes]
    facts += attributed(rng, t, t.artifacts[0], changes[:3], 2)
    facts += attributed(rng, t, t.artifacts[1], changes[3:], 1)
    offers = rng.sample(OFFERS, 2)
    other = {**v, "c": v["c2"], "c2": v["c"], "vendor": v["vendor2"], "vendor2": v["vendor"]}
    facts += [who(rng, t, offers[0], v), who(rng, t, offers[1], other)]
    facts += [decision(rng, t, row) for row in rng.sample(DECISIONS, 2)]
    facts += [
        setups(rng, t, {**v, "c": t.components[3]}, rng.choice([2, 3])),
        plan(rng, t, rng.choice(PLANS), {**v, "c": t.components[4]}),
    ]
    facts += [paraphrase(rng, t, row, {**v, "c": t.components[5]}) for row in rng.sample(PARAPHRASES, 2)]
    facts += [
        temporal(rng, t, row, {**v, "c": t.components[6], "vendor": t.vendors[2 + k]})
        for k, row in enumerate(rng.sample(EVENTS, 2))
    ]
    facts.append(we(rng, t, rng.choice(WE), {**v, "c": t.components[7]}))
    facts.append(single(rng, t, {**v, "c": t.components[2]}))
    return facts
