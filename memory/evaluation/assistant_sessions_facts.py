"""The facts planted in an assistant session (assistant_sessions.py), each with its question, its
answer and its evidence turns: 19 a session — 4 multi-hop, 3 temporal, 2 single-hop, 3 paraphrase,
4 first-person, 3 decision — drawn without repeats from the templates below.

A template is a row "category|question|answer|script", filled from the session's values (`values`):
the script's parts (" || ") are said on different days, its turns (" >> ") start "u:" (the person)
or "b:" (the assistant), and an evidence turn is marked "*". A decision row is
"question|answer|proposal|outright": half the time the assistant proposes and the person agrees in a
line (both evidence), else the person says it outright. The few facts that live in a tool's output
(a booking confirmation, an airline's email, a note) are functions. A temporal answer is empty: it is
the evidence turn's day, known once the turns are dated. A multi-hop answer's pieces are joined by
"; ", each said in one of its turns.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable

from memory.evaluation import assistant_sessions_material as m
from memory.evaluation import generated
from memory.evaluation.assistant_sessions_material import Life, bot, clock, price, tool, user

MULTI_HOP, TEMPORAL, SINGLE_HOP, PARAPHRASE, FIRST_PERSON, DECISION = 1, 2, 4, 6, 7, 8
PER_SESSION = {MULTI_HOP: 4, TEMPORAL: 3, SINGLE_HOP: 2, PARAPHRASE: 3, FIRST_PERSON: 4, DECISION: 3}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October")
AGREE = (
    "Yes, go with that.",
    "Sounds good, do it.",
    "Perfect, book it.",
    "Agreed.",
    "Yes please.",
    "Let's do that.",
)
ACKS = ("Noted.", "Got it.", "Saved.", "Understood, I'll remember that.", "Done.", "OK, I've made a note.")

ROWS = """
4|What is the door code for {mother}'s building?|{door_code}|*u:Note for later: the door code for {mother}'s building is {door_code}. Delivery drivers always ask.
4|What is {friend}'s new address?|{address}|*u:{friend} has moved. The new address is {address}, {home}. Update the contact, please.
4|What shoe size does {kid} take now?|{shoe_size}|*u:{kid} is a {shoe_size} in shoes now, so order that one, not the old size.
4|Where is visitor parking at {org2}?|{parking}|*b:{org2} says visitor parking is on {parking}, bay {bay}; take a ticket at the barrier.
4|What is {mate4}'s mobile number now?|{mobile}|*u:{mate4}'s new mobile is {mobile}, the old one is dead.
2|When did the new {appliance} arrive?||*u:The new {appliance} finally arrived this morning. {partner} is setting it up.
2|When did I have my {check_up}?||*u:Had my {check_up} this morning, all fine.
2|When did {sibling} pass the driving test?||*u:{sibling} passed the driving test today! First attempt.
2|When did I post the passport renewal forms?||*u:Posted the passport renewal forms today, photos and all.
2|When did {friend2} return the {lent}?||*u:{friend2} dropped by today with the {lent} we lent them.
2|When did the boiler break down?||*u:The boiler packed in this morning, no hot water. Find me a heating engineer. >> b:Searching for engineers near {street}.
6|Which flight number is my flight home from {city}?|{return_flight}|*b:Booked. The return leg from {city} is {airline2} {return_flight}, leaving at {return_time}.
6|When is my physio now?|{physio_when}|*b:Your physiotherapy appointment with {physio} has moved to {physio_when}. >> u:Thanks.
6|What time am I getting my teeth cleaned?|{hygienist_time}|*b:{dentist}'s hygienist has a slot at {hygienist_time} on {hygienist_day}; I've taken it.
6|How much did the mechanic want for the yearly check on the car?|{service_cost}|*u:{garage} quoted {service_cost} for the car's annual service, which seems steep.
6|On what date did {partner} and I get married?|{wedding_day}|*u:Our wedding anniversary is {wedding_day}, so keep that evening clear every year.
6|Who is looking after our pet during the {city5} trip?|{friend3}|*u:{friend3} agreed to feed the cat while we're in {city5}.
6|What did the movers want to charge for {sibling}'s move?|{removal_cost}|*b:The removal company, {removal_firm}, quoted {removal_cost} to move {sibling}'s things, packing included.
6|At what time is the doctor going to ring me?|{gp_time}|*b:The GP surgery can do a telephone consultation at {gp_time} tomorrow. I've accepted it.
7|What did I say I prefer in a hotel?|{hotel_taste}|*u:For hotels, I prefer {hotel_taste}.
7|Which airline did I ask you never to book?|{airline}|*u:Please never book me on {airline} again, they {airline_sin}.
7|What did I correct you about regarding my mother's birthday?|{mum_right}, not {mum_wrong}|b:I've set a yearly reminder for {mother}'s birthday on {mum_wrong}. >> *u:No, Mum's birthday is {mum_right}, not {mum_wrong}. Please fix it.
7|What seat did I say I want when flying?|{seat}|*u:I always want {seat} when I fly.
7|Before what time did I say not to book calls?|{no_calls_before}|*u:No calls before {no_calls_before}, that's {morning_habit}.
7|What did I tell you I've stopped eating?|{food}|*u:I've stopped eating {food}, so bear that in mind when you pick places.
7|How did I ask you to sign off my emails?|{sign_off}|*u:Sign my emails '{sign_off}', not 'Best regards'.
7|Whose emails did I say to always flag as urgent?|{mate}|*u:Always flag emails from {mate} as urgent, even the chatty ones.
7|What limit did I set for {partner}'s present?|{gift_limit}|*u:I don't want to spend more than {gift_limit} on {partner}'s present.
7|What did I tell you {partner} can't stand?|{dislike}|*u:{partner} can't stand {dislike}, so rule that out.
7|Which evening did I say to keep free?|{free_evening}|*u:Keep {free_evening} evenings free, that's my {hobby} night.
1|Which walk did we plan for {walk_day}, and how did it go?|{walk}; {walk_outcome}|*u:On {walk_day} we're doing the {walk} with {partner}. || *u:The walk on {walk_day} was {walk_outcome}.
1|Who is my new contact at {org5}, and by when do they want the forms?|{mate3}; {forms_day}|*u:{mate3} is taking over as my contact at {org5}. || *u:My new contact at {org5} wants the forms back by {forms_day}.
1|What did the {product} cost when I asked you to watch it, and what did I pay?|{watch_price}; {paid_price}|*u:Keep an eye on the {product} at {watch_shop}, it's {watch_price} right now. || *b:The {product} at {watch_shop} dropped to {paid_price}, so I ordered it as you asked. >> u:Great.
1|What is the name of {friend2}'s neighbour, and what did they do when they came round?|{helper}; {deed}|*u:{helper} is {friend2}'s neighbour, and {trade}. Save the number. || *u:{helper} came round this morning and {deed}.
1|What did I ask you to add to the packing list for {city4}?|{pack1}; {pack2}; {pack3}|*u:Add {pack1} to the packing list for {city4}. || *u:Add {pack2} to the packing list for {city4}. || *u:Add {pack3} to the packing list for {city4}.
"""
DECISIONS = """
What did we decide about the summer holiday?|{holiday}|For the summer holiday I'd go with {holiday}; the {city3} option costs {holiday_extra} more.|Let's do {holiday} for the summer holiday, not {city3}.
What did we settle on for the anniversary dinner?|{restaurant}|For the anniversary dinner I'd book {restaurant} at {dinner_time}; {restaurant2} only has a late table left.|Book {restaurant} for the anniversary dinner, {dinner_time}. Not {restaurant2} this time.
What did we decide to get {mother} for her birthday?|{gift}|For {mother}'s birthday, the {gift} ({gift_cost}) beats the {gift2}; shall I order it?|Let's get {mother} the {gift} after all, not the {gift2}.
What did we decide about the broadband?|{broadband}|Switching the broadband to {broadband} saves {broadband_saving} a month with no contract. Switch?|Switch the broadband to {broadband} when the contract ends.
How did we decide I'd get to the airport for the {city2} trip?|{train}|For the {city2} trip, {train} gets you to the airport in good time; a taxi is {taxi_cost}.|I'll take {train} to the airport for {city2}, forget the taxi.
What did we decide about the weekly grocery delivery?|{grocery_slot}|I could move the weekly grocery delivery from {grocery_shop} to {grocery_slot}, when someone's always home. OK?|Move the weekly grocery delivery to {grocery_slot} from now on.
"""
# Each kind of life's own: a milestone (temporal), an event renamed (paraphrase), a choice (decision).
KIND_ROWS = {
    "travelling consultant": """
2|When did {org} sign the statement of work?||*u:{org} signed the statement of work this afternoon.
6|When is the top-level project review for {org3}?|{kind_when}|*u:The steering committee for {org3} is now {kind_when}.
Which hotel did we pick for the {org4} project weeks?|{choice}|For the {org4} project weeks I'd go with {choice} over {choice_other}.|Decision made: {choice} for the {org4} weeks, not {choice_other}.""",
    "working parent": """
2|When did {kid} get the part in the school play?||*u:{kid} got a part in the school play today, we're thrilled.
6|When is my meeting with {kid}'s teachers?|{kind_when}|*u:Parents' evening is {kind_when}; {partner} can't come.
Which summer camp did we choose for {kid}?|{choice}|For {kid}'s summer, I'd go with {choice} over {choice_other}.|Decision made: {choice} for {kid}, not {choice_other}.""",
    "small-business owner": """
2|When did the shop pass its hygiene inspection?||*u:We passed the food hygiene inspection today, top marks.
6|When are we counting all the inventory?|{kind_when}|*u:The stocktake is booked for {kind_when}, before opening.
Which supplier did we go with for the paper bags?|{choice}|For the paper bags I'd go with {choice} over {choice_other}.|Decision made: {choice} for the bags, not {choice_other}.""",
    "researcher": """
2|When was the paper with {mate2} accepted?||*u:Our paper with {mate2} was accepted today!
6|When is the final version of the paper due?|{kind_when}|*u:The camera-ready deadline is {kind_when}.
Which conference did we decide to submit to?|{choice}|For the next paper I'd go with {choice} over {choice_other}.|Decision made: we submit to {choice}, not {choice_other}.""",
    "retiree planning a move": """
2|When did we accept the offer on the house?||*u:We accepted the offer on the house today.
6|When is the inspection of the house we're buying?|{kind_when}|*u:The survey on the bungalow is {kind_when}.
Which town did we decide to move to?|{choice}|Weighing it all up, I'd go with {choice} over {choice_other}.|Decision made: we move to {choice}, not {choice_other}.""",
    "freelancer": """
2|When did {org} pay the overdue invoice?||*u:{org} paid the overdue invoice today, finally.
6|When am I presenting to win the {org3} work?|{kind_when}|*u:The pitch to {org3} is {kind_when}, on video.
What day rate did we settle on for {org4}?|{choice}|For {org4} I'd quote {choice} rather than {choice_other}.|Decision made: {choice} for {org4}, not {choice_other}.""",
    "expat starting a new job": """
2|When did the container with our furniture arrive?||*u:The container with our furniture arrived today.
6|When do I go about the papers that let me live here?|{kind_when}|*u:My residence permit appointment is {kind_when}.
Which flat did we decide to take?|{choice}|Of the two, I'd go with {choice} over {choice_other}.|Decision made: we take {choice}, not {choice_other}.""",
}
CHOICES = {
    "working parent": "Camp Wildwood|the Seabrook sailing camp|Hilltop Arts Camp",
    "small-business owner": "Harbour Packaging|Fernleaf Wholesale|Cobble Print Shop",
    "researcher": "the Lisbon Systems Symposium|the Nordic Methods Workshop|the Delft Data Conference",
    "retiree planning a move": "Whitby|Sidmouth|Totnes|Ludlow",
    "expat starting a new job": "the two-bed by the canal|the top-floor flat near the tram|the flat with the balcony",
}


Fact = generated.Fact


def _pick(rng: random.Random, options: str) -> str:
    return rng.choice(options.split("|"))


def values(rng: random.Random, c: Life) -> dict[str, str]:
    """Everything a template may name, drawn once a session (each template is used once at most)."""

    def weekday() -> str:
        return rng.choice(m.WEEKDAYS[:5])

    month = rng.choice(MONTHS)
    kind = c.kind["kind"]
    options = (
        [c.hotels[2], c.hotels[3]]
        if kind == "travelling consultant"
        else [price(c, rng, 250, 420) + " a day", price(c, rng, 430, 700) + " a day"]
        if kind == "freelancer"
        else CHOICES[kind].split("|")
    )
    choice, choice_other = rng.sample(options, 2)
    product = rng.choice(m.PRODUCTS)[0]
    helper = rng.choice([n for n in m.FIRST_NAMES if n not in m.everyone(c)])
    trade, deed = _pick(
        rng,
        "an electrician/rewired the garden lights|a piano tuner/tuned the old upright|a tailor/took in the suit "
        "trousers|a plumber/fixed the leak under the sink|a locksmith/changed the back door lock",
    ).split("/")
    pack = rng.sample(
        "the travel adapter|sunscreen|the good umbrella|my reading glasses|the spare charger|swimming goggles|a printed copy of the insurance".split(
            "|"
        ),
        3,
    )
    gift, gift2 = rng.sample(
        "cashmere scarf|garden voucher|e-reader|weekend spa trip|framed family photo|cookery class".split(
            "|"
        ),
        2,
    )
    names = {f"city{i + 1}" if i else "city": d[0] for i, d in enumerate(c.destinations)}
    names |= {f"org{i + 1}" if i else "org": o for i, o in enumerate(c.orgs)}
    names |= {f"mate{i + 1}" if i else "mate": o for i, o in enumerate(c.colleagues)}
    return {
        **names,
        "person": c.person,
        "partner": c.partner,
        "mother": c.mother,
        "sibling": c.sibling,
        "kid": c.children[0] if c.children else c.sibling,
        "friend": c.friends[0],
        "friend2": c.friends[1],
        "friend3": c.friends[2],
        "home": c.home,
        "street": c.street,
        "physio": c.physio,
        "dentist": c.dentist,
        "airline": c.airlines[0][0],
        "airline2": c.airlines[1][0],
        "restaurant": c.restaurants[0],
        "restaurant2": c.restaurants[1],
        "door_code": str(rng.randint(1000, 9999)),
        "address": f"{rng.randint(2, 180)} {rng.choice(m.STREETS)}",
        "shoe_size": f"size {rng.randint(28, 45)}",
        "parking": f"level {rng.randint(2, 6)}",
        "bay": str(rng.randint(10, 90)),
        "mobile": f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}",
        "appliance": _pick(rng, "washing machine|fridge-freezer|oven|sofa|mattress|bookcase"),
        "check_up": _pick(rng, "flu jab|eye test|blood test|hearing test|skin check"),
        "lent": _pick(rng, "ladder|tent|pasta maker|projector|drill|cool box"),
        "return_flight": f"{c.airlines[1][1]}{rng.randint(100, 999)}",
        "return_time": clock(rng),
        "physio_when": f"{weekday()} at {clock(rng, 8, 18)}",
        "hygienist_time": clock(rng, 8, 17),
        "hygienist_day": weekday(),
        "service_cost": price(c, rng, 140, 520),
        "garage": _pick(rng, "Hillside Motors|Pike's Garage|AutoCare Central|Dunmore Autos"),
        "wedding_day": f"{rng.randint(1, 28)} {rng.choice(MONTHS)}",
        "removal_cost": price(c, rng, 300, 2400),
        "removal_firm": _pick(rng, "Hartwell Removals|Two Vans & Co|Steady Hands Moving|Oakline Removals"),
        "gp_time": clock(rng, 8, 17),
        "hotel_taste": _pick(
            rng,
            "a room on a high floor away from the lift|somewhere with a pool I can swim in before breakfast|"
            "small family-run places over big chains|a proper desk in the room, not a dressing table|"
            "anywhere within walking distance of the station|a quiet room at the back, never facing the street",
        ),
        "airline_sin": _pick(
            rng, "lost my bag twice|cancelled on me in the snow|charged me for a seat I never got"
        ),
        "mum_right": f"{rng.randint(10, 19)} {month}",
        "mum_wrong": f"{rng.randint(20, 28)} {month}",
        "seat": _pick(rng, "an aisle seat near the front|a window seat on the left side|an exit-row seat"),
        "no_calls_before": clock(rng, 8, 10),
        "morning_habit": _pick(rng, "the gym|the school run|walking the dog|my swim"),
        "food": _pick(rng, "red meat|dairy|gluten|anything with shellfish|fried food"),
        "sign_off": _pick(
            rng, f"Warmly, {c.person}|Cheers, {c.person[0]}|Thanks so much, {c.person}|All best, {c.person}"
        ),
        "gift_limit": price(c, rng, 40, 300),
        "dislike": _pick(rng, "loud restaurants|early flights|seafood|cruises|surprise parties|camping"),
        "free_evening": weekday(),
        "hobby": _pick(rng, "climbing|choir|pottery|five-a-side|book club"),
        "walk_day": rng.choice(m.WEEKDAYS[5:]),
        "walk": _pick(rng, "Ridgeback Trail|Old Quarry Loop|Heron Lake circuit|Bell Tor path"),
        "walk_outcome": _pick(
            rng,
            "rained off halfway round|glorious, we saw deer|longer than we thought, four hours|muddy but worth it",
        ),
        "forms_day": weekday(),
        "product": product,
        "watch_shop": rng.choice(m.SHOPS),
        "watch_price": price(c, rng, 300, 600),
        "paid_price": price(c, rng, 150, 290),
        "helper": helper,
        "trade": trade,
        "deed": deed,
        "pack1": pack[0],
        "pack2": pack[1],
        "pack3": pack[2],
        "holiday": f"{rng.randint(5, 12)} nights in {c.destinations[3][0]}",
        "holiday_extra": price(c, rng, 200, 900),
        "dinner_time": clock(rng, 18, 20),
        "gift": gift,
        "gift2": gift2,
        "gift_cost": price(c, rng, 30, 200),
        "broadband": f"{_pick(rng, 'Fibrely|Nettle Broadband|OrbitNet|Kestrel Fibre')} {rng.choice([300, 500, 900])}",
        "broadband_saving": price(c, rng, 5, 20),
        "train": f"the {clock(rng, 5, 9)} train",
        "taxi_cost": price(c, rng, 40, 90),
        "grocery_shop": rng.choice(m.SHOPS),
        "grocery_slot": f"{weekday()} evenings",
        "kind_when": f"{weekday()} at {clock(rng, 8, 18)}",
        "choice": choice,
        "choice_other": choice_other,
    }


def _turn(c: Life, text: str) -> dict:
    return user(c, text[2:]) if text.startswith("u:") else bot(text[2:])


def from_row(rng: random.Random, c: Life, row: str, v: dict[str, str]) -> Fact:
    category, question, answer, script = (field.format(**v) for field in row.split("|", 3))
    parts: list[list[dict]] = []
    evidence: list[dict] = []
    for part in script.split(" || "):
        turns = []
        for said in part.split(" >> "):
            turn = _turn(c, said.lstrip("*"))
            turns.append(turn)
            if said.startswith("*"):
                evidence.append(turn)
        if turns[-1]["role"] == "user":
            turns.append(bot(rng.choice(ACKS)))
        parts.append(turns)
    return Fact(int(category), question, answer, parts, evidence)


def decision(rng: random.Random, c: Life, row: str, v: dict[str, str]) -> Fact:
    question, answer, proposal, outright = (field.format(**v) for field in row.split("|", 3))
    if rng.random() < 0.5:
        proposed, agreed = bot(proposal), user(c, rng.choice(AGREE))
        return Fact(DECISION, question, answer, [[proposed, agreed]], [proposed, agreed])
    said = user(c, outright)
    return Fact(DECISION, question, answer, [[said, bot("Done, I'll go ahead.")]], [said])


def ref(rng: random.Random) -> str:
    """A booking reference: six letters and digits."""
    return "".join(rng.choice(string.ascii_uppercase + string.digits) for _ in range(6))


# The facts that live in a tool's output.


def hotel_reference(rng: random.Random, c: Life, v: dict[str, str]) -> Fact:
    city, hotel, code, nights = v["city"], c.hotels[1], ref(rng), rng.randint(2, 5)
    details = [f"{nights} nights, double room", "Check-in from 3 pm"]
    shown = tool("bookings", m.confirmation(rng, c, f"{hotel}, {city}", details, code))
    ask = bot(f"Booking {hotel} in {city} for {nights} nights.")
    return Fact(
        SINGLE_HOP, f"What is the booking reference for {hotel} in {city}?", code, [[ask, shown]], [shown]
    )


def rental_wifi(rng: random.Random, c: Life, v: dict[str, str]) -> Fact:
    city, password = v["city5"], f"{rng.choice(m.SURNAMES).lower()}{rng.randint(10, 99)}"
    lines = [f"- key box by the blue door, code {rng.randint(100, 999)}", f"- Wi-Fi password: {password}"]
    shown = tool("notes", m.notes(rng, c, f"{city} rental", lines))
    ask = user(c, f"Pull up my notes on the {city} rental.")
    return Fact(
        SINGLE_HOP, f"What is the Wi-Fi password at the rental in {city}?", password, [[ask, shown]], [shown]
    )


def moved_table(rng: random.Random, c: Life, v: dict[str, str]) -> Fact:
    friend, place, later = v["friend"], c.restaurants[2], clock(rng, 20, 21)
    details = [
        f"{rng.randint(4, 9)} guests",
        f"Occasion: {friend}'s birthday",
        f"{rng.choice(m.WEEKDAYS)} {clock(rng, 18, 19)}",
    ]
    booked = tool("bookings", m.confirmation(rng, c, f"table at {place}", details, ref(rng)))
    moved = user(
        c, f"Push the table for {friend}'s birthday back to {later}, people are coming straight from work."
    )
    parts = [[bot(f"Booking {place}."), booked], [moved, bot("Done, the restaurant confirmed.")]]
    question = f"Where is {friend}'s birthday dinner, and what time is the table now?"
    return Fact(MULTI_HOP, question, f"{place}; {later}", parts, [booked, moved])


def rebooked_flight(rng: random.Random, c: Life, v: dict[str, str]) -> Fact:
    (city, code), (airline, prefix) = c.destinations[1], c.airlines[2]
    first, second, booking = f"{prefix}{rng.randint(100, 549)}", f"{prefix}{rng.randint(550, 999)}", ref(rng)
    what = f"{airline} {first} to {city} ({code})"
    booked = tool("bookings", m.confirmation(rng, c, what, ["1 adult, economy", "Seat 14C"], booking))
    hit = f"Schedule change for booking {booking}: your flight is cancelled and you are now on {second}, departing {clock(rng)}."
    found = tool("email_search", m.email_search(rng, c, "schedule change", hit))
    parts = [
        [bot(f"Booking {airline} to {city}."), booked],
        [bot("Checking your inbox for airline mail."), found],
    ]
    question = f"Which flight was I first booked on to {city}, and which did the airline move me to?"
    return Fact(MULTI_HOP, question, f"{first}; {second}", parts, [booked, found])


def extra_night(rng: random.Random, c: Life, v: dict[str, str]) -> Fact:
    city, hotel, day = v["city3"], c.hotels[0], rng.choice(m.WEEKDAYS)
    details = [f"{rng.randint(2, 4)} nights", "Breakfast included"]
    booked = tool("bookings", m.confirmation(rng, c, f"{hotel}, {city}", details, ref(rng)))
    extended = user(c, f"Add a night to the {city} stay, I'm staying till {day} now.")
    parts = [[bot(f"Booking {hotel} in {city}."), booked], [extended, bot("Extended.")]]
    return Fact(
        MULTI_HOP,
        f"Which hotel am I in for {city}, and until which day?",
        f"{hotel}; {day}",
        parts,
        [booked, extended],
    )


Maker = Callable[[random.Random, Life, dict[str, str]], Fact]
TOOL_FACTS: dict[int, list[Maker]] = {
    SINGLE_HOP: [hotel_reference, rental_wifi],
    MULTI_HOP: [moved_table, rebooked_flight, extra_night],
}


def _row_maker(row: str) -> Maker:
    return lambda rng, c, v: from_row(rng, c, row, v)


def _decision_maker(row: str) -> Maker:
    return lambda rng, c, v: decision(rng, c, row, v)


def templates(c: Life) -> dict[int, list[Maker]]:
    """Every template a session of this kind of life may use, by category, in a fixed order."""
    *rows, choice = KIND_ROWS[c.kind["kind"]].strip().split("\n")
    found: dict[int, list[Maker]] = {n: list(TOOL_FACTS.get(n, [])) for n in PER_SESSION}
    for row in [*ROWS.strip().split("\n"), *rows]:
        found[int(row.split("|")[0])].append(_row_maker(row))
    found[DECISION] += [_decision_maker(row) for row in [*DECISIONS.strip().split("\n"), choice]]
    return found


def facts_for(rng: random.Random, c: Life) -> list[Fact]:
    """The session's facts: for each category, its count of templates drawn without repeats."""
    v = values(rng, c)
    found = templates(c)
    return [
        make(rng, c, v)
        for category, count in PER_SESSION.items()
        for make in rng.sample(found[category], count)
    ]
