"""A fifth evaluation set: a team's channel where several people share one agent (`manage.py
team_channel`): standups, asks to the agent, its answers and tool calls (CI runs, tickets, SQL
queries, calendars, deploys, doc search, the on-call rota), and the teammates' talk among
themselves — in LoCoMo's JSON format, so `manage.py eval_memory --data FILE` scores it.

Sessions are numbered 1..SESSIONS; each is one channel ("team-01", …) of 300–800 turns over 4–8
sittings (days), with 3–6 people of its own, one of six kinds of team in turn (platform, mobile,
data, payments, growth web, support tooling) and its own project, components, vendors and numbers
(team_channel_material.py). Every person's turn has the role `user` and the person's first name;
the agent's is `assistant`, a tool's is `tool` with the tool's name. 15 facts a session are planted
among routine turns drawn from the same vocabulary, each with a question whose evidence turns are
labelled (team_channel_facts.py): what one person asked for while others asked for similar things,
who offered, what several people agreed, and no question that says "I". An attributed or who
question also names the other people's similar asks or offers (`distractors`, beside `evidence`).

The split is the other sets' rule: session n is in the holdout when n is divisible by 3. Everything
is seeded from the session number: the same output on every run, standard library only.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memory.evaluation import generated
from memory.evaluation import team_channel_facts as tf
from memory.evaluation import team_channel_material as m
from memory.evaluation.team_channel_material import Team, bot, say, tool

SEED = "team-channel-1"
SESSIONS = 18
MIN_TURNS, MAX_TURNS = 300, 800
MIN_SITTINGS, MAX_SITTINGS = 4, 8

in_holdout = generated.in_holdout

# Edits routine turns ask for: none is a fact's change (team_channel_facts.CHANGES).
EDITS = m._bar(
    "fix the typo in the heading|update the date at the top|add last week's numbers|fix the broken link|"
    "make the table narrower|update the owner list|bump the version number|sort the list alphabetically"
)
WORK = m._bar(
    "finishing the {c} refactor|reviewing PRs|pairing on the {c}|chasing the {c} flake|writing tests for the {c}|"
    "on the {ticket} bug|cleaning up the {c} config|reading up on the {c} migration|stuck in interviews|"
    "profiling the {c}|updating dashboards|on support rotation"
)
QUESTIONS = m._bar(
    "signups|failed payments|active users|support tickets|crash reports|api errors|refund requests|page views"
)


def _branch(rng: random.Random, t: Team) -> str:
    return rng.choice(
        ["main", f"{rng.choice(t.people).lower()}/{rng.choice(t.components).replace(' ', '-')}"]
    )


def _work(rng: random.Random, t: Team) -> str:
    return rng.choice(WORK).format(c=rng.choice(t.components), ticket=m.ticket(rng, t))


def _filler(rng: random.Random, t: Team) -> list[dict]:
    """One routine episode of the channel."""
    person = rng.choice(t.people)
    other = rng.choice([p for p in t.people if p != person])
    c = rng.choice(t.components)
    day = rng.choice(m.WEEKDAYS)
    kind = rng.choices(
        [
            "standup",
            "ci",
            "tickets",
            "sql",
            "calendar",
            "deploy",
            "docs",
            "chat",
            "pr",
            "edit",
            "rota",
            "tldr",
        ],
        weights=[9, 12, 8, 6, 6, 6, 4, 14, 6, 5, 3, 3],
    )[0]
    if kind == "standup":
        speakers = rng.sample(t.people, rng.randint(2, len(t.people)))
        today = {p: _work(rng, t) for p in speakers}
        turns = [
            say(
                p,
                f"Yesterday: {_work(rng, t)}. Today: {today[p]}. "
                f"Blockers: {rng.choice(['none', 'none', f'waiting on {rng.choice(t.people)} for a review', 'CI is slow'])}.",
            )
            for p in speakers
        ]
        if rng.random() < 0.4:
            turns.append(say(rng.choice(t.people), "@assistant summarise standup please"))
            turns.append(bot("Standup: " + "; ".join(f"{p} — {today[p]}" for p in speakers) + "."))
        return turns
    if kind == "ci":
        branch = _branch(rng, t)
        failing = rng.choice(m.ERRORS) if rng.random() < 0.35 else ""
        turns = [
            say(
                person,
                rng.choice(
                    [
                        f"@assistant is {branch} green?",
                        f"@assistant how did CI on {branch} go?",
                        "@assistant CI status?",
                    ]
                ),
            ),
            tool("ci", m.ci(rng, t, branch, failing)),
            bot(f"Failed: {failing}. Looks like the usual suspect." if failing else "All green."),
        ]
        if failing:
            turns += [
                say(
                    rng.choice(t.people),
                    rng.choice(["flaky, rerun it", "@assistant rerun please", "ugh, retry"]),
                ),
                tool("ci", m.ci(rng, t, branch)),
                bot("Green on the rerun."),
            ]
        return turns
    if kind == "tickets":
        return [
            say(
                person,
                rng.choice([f"@assistant what's open on the {c}?", f"@assistant any tickets for the {c}?"]),
            ),
            tool("tickets", m.tickets(rng, t, c)),
            bot(f"{rng.randint(3, 6)} open, none older than two weeks; one is in review."),
            say(other, rng.choice(m.REPLIES)),
        ]
    if kind == "sql":
        what = rng.choice(QUESTIONS)
        return [
            say(person, f"@assistant how many {what} this week vs last?"),
            tool("sql", m.sql(rng, t, what)),
            bot(
                f"Roughly flat; {rng.choice(['yesterday', 'Tuesday', 'Monday'])} was the peak at about {rng.randint(2, 9)}k."
            ),
        ]
    if kind == "calendar":
        who = rng.sample(t.people, min(3, len(t.people)))
        slot = m.clock(rng, 10, 16)
        return [
            say(person, f"@assistant find 30 min on {day} for {', '.join(who)} — {t.kind['meeting']} prep"),
            tool("calendar", m.calendar(rng, t, day, who)),
            bot(f"{day} {slot} works for all three. Book it?"),
            say(person, rng.choice(["yes please", "book it", "go ahead"])),
            bot("Booked and invites sent."),
        ]
    if kind == "deploy":
        version = f"v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        return [
            say(person, f"@assistant deploy {version} to staging"),
            tool("deploy", m.deploy(rng, t, "staging", version)),
            bot(f"Staging is on {version}."),
        ]
    if kind == "docs":
        return [
            say(person, f"@assistant where's the runbook for the {c}?"),
            tool("docs", m.docs(rng, t, f"{c} runbook")),
            bot("The first hit; the old wiki copy is out of date."),
        ]
    if kind == "chat":
        turns = [say(person, rng.choice(m.SMALL_TALK).format(food=rng.choice(m.RESTAURANTS), other=other))]
        for _ in range(rng.randint(0, 3)):
            turns.append(
                say(rng.choice([p for p in t.people if p != turns[-1]["name"]]), rng.choice(m.REPLIES))
            )
        return turns
    if kind == "pr":
        return [
            say(
                person,
                f"PR up for the {c}: {rng.choice(['small cleanup', 'adds metrics', 'fixes the retry', 'renames a config key'])}, {m.ticket(rng, t)}",
            ),
            say(other, rng.choice(["👀", "looking", "approved", "left two nits"])),
        ]
    if kind == "edit":
        art = rng.choice(t.artifacts[2:])
        return [say(person, f"@assistant in the {art}, {rng.choice(EDITS)}"), bot(rng.choice(m.BOT_ACKS))]
    if kind == "rota":
        return [
            say(person, "@assistant who's on call this week?"),
            tool("oncall", m.rota(rng, t)),
            bot("That's the rota as it stands; no swaps recorded."),
        ]
    return [
        say(person, "@assistant tl;dr of the thread above?"),
        bot(
            f"{rng.choice(t.people)} and {rng.choice(t.people)} are looking at the {c}; nothing decided yet."
        ),
    ]


def session(number: int) -> dict:
    """Session `number` as a LoCoMo sample (with per-turn role, name and date_time)."""
    rng = random.Random(f"{SEED}-{number}")
    t = m.team(rng, number)
    facts = tf.facts_for(rng, t)
    fact_turns = sum(len(p) for f in facts for p in f.parts)
    target = rng.randint(MIN_TURNS + 60, MAX_TURNS - 60)
    episodes: list[list[dict]] = []
    while sum(map(len, episodes)) + fact_turns < target:
        episodes.append(_filler(rng, t))
    sittings = generated.sittings(rng, episodes, rng.randint(MIN_SITTINGS, MAX_SITTINGS))
    # A fact's parts go to different sittings, in order; any sitting may hold one.
    for fact in facts:
        days = sorted(rng.sample(range(len(sittings)), len(fact.parts)))
        for day, part in zip(days, fact.parts, strict=True):
            sittings[day].insert(rng.randint(0, len(sittings[day])), part)
    when = datetime(2025, 1, 6) + timedelta(days=rng.randint(0, 300))
    conversation: dict = {"speaker_a": t.people[0], "speaker_b": "assistant"}
    for n, sitting in enumerate(sittings, start=1):
        when = when.replace(hour=rng.randint(8, 10), minute=rng.randint(0, 59)) + timedelta(
            days=rng.randint(1, 3)
        )
        conversation[f"session_{n}_date_time"] = generated.date_time(when)
        at, rows = when, []
        for k, turn in enumerate((t for episode in sitting for t in episode), start=1):
            at += timedelta(seconds=rng.randint(10, 100))
            turn["dia_id"], turn["_day"] = f"D{n}:{k}", generated.day_of(at)
            rows.append(generated.row(turn, at))
        conversation[f"session_{n}"] = rows
    return {
        "sample_id": f"team-{number:02d}",
        "team": t.kind["kind"],
        "people": t.people,
        "conversation": conversation,
        "qa": generated.qa(facts),
    }


def build(split: str = "all") -> list[dict]:
    """The sessions of a split: "dev", "holdout" or "all"."""
    return generated.build(split, SESSIONS, session)
