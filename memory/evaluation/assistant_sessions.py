"""A third evaluation set, of a person and their personal assistant agent over many days
(`manage.py assistant_sessions`): scheduling, email, travel and bookings, shopping, errands, family
and small talk, with the tools' long outputs (calendar, email_search, web_search, notes, bookings,
maps, shopping, weather) — in LoCoMo's JSON format, so `manage.py eval_memory --data FILE` scores it.

Sessions are numbered 1..SESSIONS; each is one conversation ("assist-01", …) of 300–1,000 turns over
4–10 sittings (days), with its own person, kind of life (a travelling consultant, a working parent, a
small-business owner, a researcher, a retiree planning a move, a freelancer, an expat), family,
colleagues, places and numbers (assistant_sessions_material.py). Each turn has its role (user,
assistant, tool), its name (the person's first name, "assistant", or the tool) and its own time. Most
turns are routine, drawn from the same vocabulary as the facts; 19 facts a session are planted among
them, each with a question whose evidence turns are labelled (assistant_sessions_facts.py).

The split is a fixed rule: session n is in the holdout when n is divisible by 3, in dev otherwise.
Everything is seeded from the session number: the same output on every run, standard library only.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memory.evaluation import assistant_sessions_facts as af
from memory.evaluation import assistant_sessions_material as m
from memory.evaluation import generated
from memory.evaluation.assistant_sessions_material import Life, bot, clock, tool, user

SEED = "assistant-sessions-1"
SESSIONS = 21
MIN_TURNS, MAX_TURNS = 300, 1000
MIN_SITTINGS, MAX_SITTINGS = 4, 10


in_holdout = generated.in_holdout


def _when(rng: random.Random) -> str:
    return rng.choice(["today", "tomorrow", *(f"on {d}" for d in m.WEEKDAYS)])


def _filler(rng: random.Random, c: Life) -> list[dict]:
    """One routine episode: a calendar check, an inbox search, a search for flights or hotels, a
    draft, a reminder, an errand, family news or small talk. Facts' own hotels and restaurants (the
    first few of each) are never booked here, so a filler booking does not answer a fact's question."""
    who = rng.choice(m.everyone(c))
    event, chore, day = rng.choice(c.kind["events"]), rng.choice(m.CHORES), rng.choice(m.WEEKDAYS)
    city, code = rng.choice(c.destinations)
    kind = rng.choices(
        ["calendar", "email", "flights", "hotels", "weather", "route", "shopping", "web", "notes"]
        + ["draft", "reminder", "move", "task", "talk", "booking", "family"],
        weights=[10, 10, 5, 4, 6, 4, 4, 4, 3, 7, 7, 6, 6, 8, 3, 9],
    )[0]
    if kind == "calendar":
        when = _when(rng)
        return [
            user(
                c,
                rng.choice(
                    [f"What's on {when}?", f"Can you check my calendar {when}?", f"How busy am I {when}?"]
                ),
            ),
            bot("Checking your calendar."),
            tool("calendar", m.calendar(rng, c, when.removeprefix("on "))),
            bot(
                rng.choice(
                    [
                        f"A full day. The gap after lunch is the best chance to {chore}.",
                        f"Fairly light: the call with {who} is the only fixed point.",
                        "Back-to-back in the morning, free from four.",
                        f"Nothing clashes, but the {event} runs close to the next thing.",
                    ]
                )
            ),
        ]
    if kind == "email":
        return [
            user(c, f"Any emails from {who} about the {event}?"),
            bot("Searching your inbox."),
            tool("email_search", m.email_search(rng, c, f"from:{who} {event}", sender=who)),
            bot(
                rng.choice(
                    [
                        f"Nothing urgent. The latest asks whether {day} still works.",
                        "Nothing new since Tuesday.",
                    ]
                )
            ),
        ]
    if kind == "flights":
        return [
            user(c, f"Look up flights to {city} for {day}, just to see prices."),
            bot(f"Searching flights from {c.home} to {city}."),
            tool("bookings", m.flights(rng, c, city, code)),
            bot(
                rng.choice(
                    [
                        f"Prices look normal for {day}. Shall I hold a seat?",
                        "The morning ones are dearer. Hold one?",
                    ]
                )
            ),
            user(c, rng.choice(["Not yet, just looking.", "No, leave it for now.", "Maybe next week."])),
        ]
    if kind == "hotels":
        return [
            user(c, f"What hotels are there in {city} near the centre?"),
            tool("bookings", m.hotels(rng, c, city)),
            bot("Two have free cancellation; prices are up on last month, the cheaper ones are further out."),
        ]
    if kind == "weather":
        place = rng.choice([c.home, city])
        return [
            user(c, f"What's the weather doing in {place} this week?"),
            tool("weather", m.weather(rng, c, place)),
            bot(
                rng.choice(
                    [
                        f"Take an umbrella on {day}.",
                        "Mild all week.",
                        f"{day} looks like the best day to be outside.",
                    ]
                )
            ),
        ]
    if kind == "route":
        place = rng.choice([*c.orgs, *c.restaurants])
        return [
            user(c, f"How long will it take me to get to {place}?"),
            tool("maps", m.route(rng, c, place)),
            bot(f"Leave {rng.randint(5, 20)} minutes early, traffic is building."),
        ]
    if kind == "shopping":
        product, traits = rng.choice(m.PRODUCTS)
        return [
            user(c, f"Compare a few {product}s for me, nothing fancy."),
            tool("shopping", m.shopping(rng, c, product, traits)),
            bot(
                f"The {rng.choice(m.MODEL_WORDS)} has the best {traits} for the price; the cheapest one has poor reviews."
            ),
            user(c, rng.choice(["I'll think about it.", "Bookmark the first two.", "Fine, not now though."])),
        ]
    if kind == "web":
        query = rng.choice(
            [
                f"{rng.choice(c.restaurants)} opening hours",
                f"things to do in {city}",
                f"{rng.choice(m.PRODUCTS)[0]} reviews",
            ]
        )
        return [user(c, f"Search for {query}."), tool("web_search", m.web_search(rng, c, query))]
    if kind == "notes":
        title = rng.choice(
            ["errands", "ideas for the weekend", f"{rng.choice(c.orgs)} follow-ups", "house jobs"]
        )
        lines = [
            f"- {rng.choice(m.CHORES)}",
            f"- {rng.choice(c.kind['tasks']).format(org=rng.choice(c.orgs))}",
        ]
        return [user(c, f"What's on my {title} list?"), tool("notes", m.notes(rng, c, title, lines))]
    if kind == "draft":
        gist = rng.choice(
            [
                f"I can't make {day}, but {rng.choice(m.WEEKDAYS)} works",
                f"thanks for {rng.choice(m.MEAL_WORDS)} at {rng.choice(c.restaurants)}",
                f"I'll send the notes from the {event} by the end of the week",
            ]
        )
        draft = (
            f"Draft:\n\nHi {who},\n\n{gist[0].upper()}{gist[1:]}. {rng.choice(['Hope the week is going well.', 'Sorry for the slow reply.', 'Let me know if anything changes.'])}"
            f" {rng.choice(['Speak soon.', 'Thanks again.', 'Talk then.'])}\n\n{c.person}\n\nShall I send it?"
        )
        asked, done = rng.choice(
            [
                ("Send it.", "Sent."),
                ("Make it a bit warmer, then send.", "Warmed up and sent."),
                ("Shorter, please.", "Shortened and sent."),
            ]
        )
        return [user(c, f"Draft a reply to {who}: {gist}."), bot(draft), user(c, asked), bot(done)]
    if kind == "reminder":
        return [
            user(c, f"Remind me to {chore} on {day}."),
            bot(f"Reminder set for {day} at {clock(rng, 8, 19)}: {chore}."),
        ]
    if kind == "move":
        return [
            user(c, f"Move my {event} with {who} to {day} at {clock(rng, 8, 18)}."),
            tool("calendar", m.calendar(rng, c, day)),
            bot(f"Done. I've moved it and sent {who} the new time."),
        ]
    if kind == "task":
        task = rng.choice(c.kind["tasks"]).format(org=rng.choice(c.orgs))
        return [
            user(c, f"Can you {task}?"),
            bot(rng.choice(["On it.", "Done.", "I'll do that this afternoon.", "Sure, give me a minute."])),
        ]
    if kind == "talk":
        return [user(c, rng.choice(m.SMALL_TALK_USER)), bot(rng.choice(m.SMALL_TALK_ASSISTANT))]
    if kind == "booking":
        place = rng.choice(c.restaurants[3:])
        details = [f"{rng.randint(2, 6)} guests", f"{day} {clock(rng, 12, 20)}", "Occasion: none given"]
        return [
            user(c, f"Book a table at {place} for {day}."),
            bot(f"Booking a table at {place}."),
            tool("bookings", m.confirmation(rng, c, f"table at {place}", details, af.ref(rng))),
        ]
    news = rng.choice(
        [
            f"{c.partner} asked me to {chore} before the weekend.",
            f"{c.mother} wants to know if we're free on {day}.",
            f"{c.sibling} is coming to stay for a few days next month.",
            f"{rng.choice(c.friends)}'s parents are celebrating their anniversary; find a nice card?",
            f"{c.physio} sent over the exercise sheet; can you print it?",
            "The dentist's reminder letter came again, you can ignore it.",
            f"{rng.choice(c.colleagues)}'s flight home got delayed again, so the {event} moves.",
            f"{rng.choice(m.everyone(c))} needs picking up at {clock(rng, 15, 19)} on {day}.",
        ]
    )
    return [
        user(c, news),
        bot(rng.choice(["I'll put it in the calendar.", "Noted.", "OK, I'll sort it.", "Will do."])),
    ]


def session(number: int) -> dict:
    """Session `number` as a LoCoMo sample (with per-turn role, name and date_time)."""
    rng = random.Random(f"{SEED}-{number}")
    c = m.life(rng, number)
    facts = af.facts_for(rng, c)
    fact_turns = sum(len(p) for f in facts for p in f.parts)
    target = rng.randint(MIN_TURNS + 100, MAX_TURNS - 200)
    episodes: list[list[dict]] = []
    while sum(map(len, episodes)) + fact_turns < target:
        episodes.append(_filler(rng, c))
    sittings = generated.sittings(rng, episodes, rng.randint(MIN_SITTINGS, MAX_SITTINGS))
    # A fact's parts go to different sittings, in order; any sitting may hold one, so facts sit
    # early as well as late.
    for fact in facts:
        days = sorted(rng.sample(range(len(sittings)), len(fact.parts)))
        for day, part in zip(days, fact.parts, strict=True):
            sittings[day].insert(rng.randint(0, len(sittings[day])), part)
    when = datetime(2024, 1, 8) + timedelta(days=rng.randint(0, 400))
    conversation: dict = {"speaker_a": c.person, "speaker_b": "assistant"}
    for n, sitting in enumerate(sittings, start=1):
        when = when.replace(hour=rng.randint(7, 11), minute=rng.randint(0, 59)) + timedelta(
            days=rng.randint(1, 6)
        )
        conversation[f"session_{n}_date_time"] = generated.date_time(when)
        at, rows = when, []
        for k, turn in enumerate((t for episode in sitting for t in episode), start=1):
            # A minute or so between turns: a sitting of 300 turns still ends the same day.
            at += timedelta(seconds=rng.randint(5, 90))
            turn["dia_id"], turn["_day"] = f"D{n}:{k}", generated.day_of(at)
            rows.append(generated.row(turn, at))
        conversation[f"session_{n}"] = rows
    qa = generated.qa(facts)
    return {
        "sample_id": f"assist-{number:02d}",
        "life": c.kind["kind"],
        "conversation": conversation,
        "qa": qa,
    }


def build(split: str = "all") -> list[dict]:
    """The sessions of a split: "dev", "holdout" or "all"."""
    return generated.build(split, SESSIONS, session)
