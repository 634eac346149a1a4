"""The vocabulary of the assistant sessions (assistant_sessions.py): the people, places, airlines,
hotels, restaurants, shops and the seven kinds of life the sessions are about; each session's own
cast (`Life`), the turn constructors, and the tool outputs (calendar, email search, flight and hotel
search, weather, maps, shopping, notes, booking confirmations) that facts and routine turns share.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


def _bar(text: str) -> list[str]:
    return [piece.strip() for piece in text.split("|") if piece.strip()]


def _pairs(text: str) -> tuple[tuple[str, str], ...]:
    """ "a/b|c/d" as (("a", "b"), ("c", "d"))."""
    return tuple((first, second) for first, second in (piece.split("/") for piece in _bar(text)))


# The person of session n is PERSONS[n - 1]: every session has its own.
PERSONS = (
    "Helena Marcus Priya Tomasz Ingrid Daniel Amara Felix Rosalind Kenji Beatrix Omar Lucia Graham "
    "Sunita Pieter Nadia Callum Yasmin Rafael Margit Anselm Odile Theo"
).split()
FIRST_NAMES = (
    "Aisha Alba Alvaro Anika Arjun Astrid Bea Bilal Bram Bruno Camille Carmen Cecil Chidi Clara Conor "
    "Dagny Dario Delphine Dev Dora Eamon Edda Elif Emeka Enzo Esme Ewan Farah Fenna Finn Flora Gaspard "
    "Gemma Gideon Greta Hamza Hana Hector Hugo Ida Ilse Imran Isla Ivo Jana Jasper Joaquin Jonas Jun "
    "Kasia Keiko Kofi Lars Leila Lena Levi Linnea Lorenzo Maeve Malik Marit Mateo Mila Miro Nell Nico "
    "Noor Olek Olive Orla Osman Paloma Pavel Petra Quentin Rania Reza Rhea Rory Rosa Ruben Saoirse "
    "Selma Soren Stellan Tamsin Teodor Tilde Tobias Uma Valentin Vera Wren Xavi Yara Yusuf Zadie Zora"
).split()
SURNAMES = (
    "Abernethy Alvarez Bakker Brennan Castellano Dahl Delacroix Eriksen Fairbairn Fonseca Gallagher "
    "Halloran Haugen Iwasaki Jaramillo Kowalczyk Lindqvist Maddox Marchetti Nakamura Okafor Pellegrini "
    "Quigley Ramaswamy Rasmussen Sandoval Szabo Thornbury Umberti Valdivia Verhoeven Whitlock Yilmaz Zeller"
).split()

# (home town, currency sign): the person of session n lives in HOMES[n - 1].
HOMES = _pairs(
    "Leeds/£|Lyon/€|Denver/$|Bristol/£|Utrecht/€|Portland/$|Edinburgh/£|Ghent/€|Austin/$|Norwich/£|Porto/€|Madison/$|Cardiff/£|Graz/€|Halifax/$|York/£|Bologna/€|Boulder/$|Bath/£|Malmo/€|Savannah/$|Exeter/£|Aarhus/€"
)
STREETS = _bar(
    "Alder Road|Beacon Street|Chapel Lane|Dovecote Row|Elm Grove|Fenwick Avenue|Garnet Close|Hollis Way|"
    "Juniper Terrace|Kestrel Drive|Larkspur Street|Millbrook Road|Nettle Lane|Orchard Mews|Pine Hill|"
    "Quarry Street|Rowan Crescent|Sorrel Place|Tanner's Yard|Upland Road|Willow Walk"
)
# (city, airport code): places a person travels to.
DESTINATIONS = _pairs(
    "Lisbon/LIS|Copenhagen/CPH|Vienna/VIE|Montreal/YUL|Seville/SVQ|Krakow/KRK|Dublin/DUB|Athens/ATH|Reykjavik/KEF|Valencia/VLC|Zurich/ZRH|Singapore/SIN|Toronto/YYZ|Helsinki/HEL|Palermo/PMO|Tallinn/TLL|Marrakech/RAK|Oslo/OSL|Nice/NCE|Budapest/BUD|Chicago/ORD|Split/SPU"
)
# (airline, flight-number prefix): invented carriers.
AIRLINES = _pairs(
    "Skylark Airways/SK|Meridian Air/MR|BlueFin Air/BF|Carrow Airlines/CW|Aerosud/AS|Northwind/NW|Halcyon Air/HC|Tern Airlines/TN|Vela Airways/VL|Corvid Air/CV"
)
HOTELS = _bar(
    "Hotel Aurelia|The Lantern House|Casa Olivo|Harbourlight Hotel|The Granary Rooms|Hotel Sankt Jakob|"
    "Linden Court Hotel|The Weaver's Inn|Maison Ardoise|Hotel Solvang|The Quayside|Palazzo Vetro|"
    "The Larch Lodge|Hotel Boreal|Ostrich Feather Inn|The Cloister Hotel|Hotel Miramonte|The Foundry Hotel"
)
RESTAURANTS = _bar(
    "Osteria Lume|The Copper Kettle|Saffron House|Brasserie Vautrin|Kaiseki Mori|The Hungry Heron|"
    "Taverna Kyma|El Rincon Azul|The Pickled Walnut|Bistro Margaux|Noodle Bar Hoshi|The Anchor & Oar|"
    "Trattoria Vento|Mezze Courtyard|The Juniper Table|Cafe Odessa|Smokehouse 54|La Petite Ecluse|"
    "The Fig Tree|Ramen Kaze|Casa Dorada|The Green Hare"
)
SHOPS = _bar(
    "Brightcart|Hartley & Sons|Norrland Outdoor|HomeHive|Tinker Electronics|Parcelpoint|Marlow Goods"
)
# (product, what sets its models apart)
PRODUCTS = _pairs(
    "robot vacuum/suction and battery|standing desk/height range and motor|e-bike/range and weight|coffee grinder/burr type and grind settings|carry-on suitcase/weight and wheels|noise-cancelling headphones/battery and fit|air fryer/capacity and wattage|winter coat/fill and waterproofing|garden bench/wood and length|office chair/lumbar support and arms|dishwasher/noise and energy rating|hiking boots/ankle support and sole"
)
MODEL_WORDS = _bar("Aero|Nimbus|Atlas|Vega|Orion|Pico|Tundra|Summit|Lumen|Kite|Halo|Strata")
CHORES = _bar(
    "renew the car insurance|pick up the dry cleaning|water the tomatoes|pay the window cleaner|book a haircut|"
    "return the library books|order more printer ink|call the bank about the card|sort the recycling|"
    "top up the parking permit|send the thank-you cards|check the tyre pressure|cancel the trial subscription|"
    "back up the laptop|buy stamps|defrost the freezer|collect the parcel from the depot"
)
MEAL_WORDS = _bar("lunch|coffee|dinner|breakfast|drinks")
WEATHER = _bar(
    "sunny spells|light rain|overcast|heavy showers|clear skies|fog clearing by noon|gusty wind|drizzle"
)
SMALL_TALK_USER = _bar(
    "Thanks, that's a weight off.|Long day. Remind me why I agreed to all of this.|Perfect, thank you.|"
    "Ugh, Mondays.|I'll look at the rest later, I'm off to get coffee.|That's fine, leave it for now.|"
    "Good morning! What does today look like?|Sorry, got distracted by the doorbell. Where were we?|"
    "Nice, that was quicker than I expected.|Can you keep things short today? I'm on my phone."
)
SMALL_TALK_ASSISTANT = _bar(
    "You're welcome.|Happy to help. Anything else for today?|No problem, I'll keep it brief.|"
    "Understood. I'll keep an eye on it.|Of course. I'm here when you need me.|Noted.|"
    "Sounds good. I'll pick it up later.|Got it."
)


# The seven kinds of life; session n is KINDS[(n - 1) % 7], so the holdout (every third) has all seven.
KINDS: tuple[dict, ...] = (
    {
        "kind": "travelling consultant",
        "orgs": _bar(
            "Halvorsen Logistics|Brightwater Insurance|Quarrystone Foods|Pellam Energy|Ostrava Rail"
        ),
        "events": _bar("site visit|client workshop|status call|proposal review|kick-off meeting"),
        "tasks": _bar(
            "prepare the slides for {org}|send {org} the revised timeline|book a meeting room near {org}|"
            "file my expenses for the {org} trip|chase {org} for the signed statement of work"
        ),
    },
    {
        "kind": "working parent",
        "orgs": _bar(
            "Greenfield Primary|St Aidan's School|Riverside Swim Club|Little Oaks Nursery|the Scout hut"
        ),
        "events": _bar("school run|swimming lesson|sports day|football practice|piano lesson"),
        "tasks": _bar(
            "sign the trip form for {org}|find the PE kit list from {org}|pay the {org} fees|"
            "sort lifts to {org} with the other parents|order name labels for the uniforms"
        ),
    },
    {
        "kind": "small-business owner",
        "orgs": _bar(
            "Millstone Flour Co|Harbour Packaging|Fernleaf Wholesale|Cobble Print Shop|Ridgeway Dairy"
        ),
        "events": _bar("supplier call|delivery slot|market stall|staff rota meeting|accountant meeting"),
        "tasks": _bar(
            "reorder from {org}|chase the invoice from {org}|update the shop opening hours online|"
            "reply to the review about the queue|draft the weekend staff rota"
        ),
    },
    {
        "kind": "researcher",
        "orgs": _bar(
            "the Kessler Institute|Aldergrove University|the Marlowe Lab|the Helix Consortium|Fenner College"
        ),
        "events": _bar("lab meeting|reading group|grant panel|thesis committee|seminar talk"),
        "tasks": _bar(
            "send the draft to the co-authors at {org}|book the seminar room|reply to the reviewer comments|"
            "register for the workshop at {org}|order the reagents the lab is short of"
        ),
    },
    {
        "kind": "retiree planning a move",
        "orgs": _bar(
            "Hollins Estate Agents|Bellweather Removals|the Seaview Bowls Club|Marsh & Co Solicitors|Kingfisher Lettings"
        ),
        "events": _bar("house viewing|bowls club night|choir practice|solicitor meeting|allotment open day"),
        "tasks": _bar(
            "ask {org} for the updated particulars|sort the loft boxes for the charity shop|"
            "get a quote from {org}|redirect the post|list the dining table for sale"
        ),
    },
    {
        "kind": "freelancer",
        "orgs": _bar("Lumen Studio|Parrot & Pine|Cartwheel Media|Northgate Books|Ferro Architects"),
        "events": _bar("client call|portfolio review|co-working day|briefing call|invoice run"),
        "tasks": _bar(
            "send {org} the invoice for last month|send {org} the second round of drafts|"
            "update my portfolio site|chase {org} for feedback|renew the co-working desk"
        ),
    },
    {
        "kind": "expat starting a new job",
        "orgs": _bar(
            "the immigration office|Vantage Relocation|the town hall|Keystone Bank|the language school"
        ),
        "events": _bar("language class|onboarding session|flat viewing|bank appointment|team lunch"),
        "tasks": _bar(
            "book the appointment at {org}|translate the letter from {org}|scan my passport for {org}|"
            "find the tax number form|set up a direct debit for the rent"
        ),
    },
)


@dataclass
class Life:
    """One session's cast: the person and everyone and everywhere the session talks about."""

    number: int
    kind: dict
    person: str
    surname: str
    home: str
    money: str
    street: str
    partner: str
    mother: str
    sibling: str
    children: list[str]
    friends: list[str]
    colleagues: list[str]
    destinations: list[tuple[str, str]]
    airlines: list[tuple[str, str]]
    hotels: list[str]
    restaurants: list[str]
    physio: str
    dentist: str
    orgs: list[str] = field(default_factory=list)


def life(rng: random.Random, number: int) -> Life:
    person = PERSONS[number - 1]
    home, money = HOMES[number - 1]
    names = rng.sample([n for n in FIRST_NAMES if n != person], 13)
    kind = KINDS[(number - 1) % len(KINDS)]
    # A parent has two children; the others one at most (a grown-up child, a niece), as in life.
    children = names[3:5] if kind["kind"] == "working parent" else names[3:4]
    return Life(
        number=number,
        kind=kind,
        person=person,
        surname=rng.choice(SURNAMES),
        home=home,
        money=money,
        street=rng.choice(STREETS),
        partner=names[0],
        mother=names[1],
        sibling=names[2],
        children=children,
        friends=names[5:8],
        colleagues=names[8:12],
        destinations=rng.sample(DESTINATIONS, 5),
        airlines=rng.sample(AIRLINES, 5),
        hotels=rng.sample(HOTELS, 6),
        restaurants=rng.sample(RESTAURANTS, 7),
        physio=f"{names[12]} {rng.choice(SURNAMES)}",
        dentist=f"Dr {rng.choice(SURNAMES)}",
        orgs=list(kind["orgs"]),
    )


def everyone(c: Life) -> list[str]:
    return [c.partner, c.mother, c.sibling, *c.children, *c.friends, *c.colleagues]


def user(c: Life, text: str) -> dict:
    return {"role": "user", "name": c.person, "text": text}


def bot(text: str) -> dict:
    return {"role": "assistant", "name": "assistant", "text": text}


def tool(name: str, text: str) -> dict:
    return {"role": "tool", "name": name, "text": text}


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def clock(rng: random.Random, start: int = 7, end: int = 20) -> str:
    hour, minute = rng.randint(start, end), rng.choice((0, 15, 30, 45))
    return f"{hour % 12 or 12}:{minute:02d} {'am' if hour < 12 else 'pm'}"


def price(c: Life, rng: random.Random, low: int, high: int) -> str:
    return f"{c.money}{rng.randint(low, high)}"


def _fit(head: str, rows: list[str], tail: str = "") -> str:
    """A tool's output: the head, as many rows as fit in 1,150 characters, and the tail."""
    text = head
    for row in rows:
        if len(text) + len(row) + len(tail) + 2 > 1150:
            break
        text += "\n" + row
    return text + ("\n" + tail if tail else "")


def calendar(rng: random.Random, c: Life, day: str, extra: list[str] | None = None) -> str:
    """A day's calendar listing: meetings, errands and the person's own events."""
    rows = list(extra or [])
    hours = sorted(rng.sample(range(7, 20), 5))
    for hour in hours:
        who = rng.choice(everyone(c))
        what = rng.choice(
            [
                f"{rng.choice(c.kind['events']).capitalize()} with {who}",
                f"{rng.choice(MEAL_WORDS).capitalize()} with {who} at {rng.choice(c.restaurants)}",
                f"Call {who} re {rng.choice(c.orgs)}",
                f"Reminder: {rng.choice(CHORES)}",
                f"{rng.choice(c.kind['events']).capitalize()} ({rng.choice(c.orgs)})",
            ]
        )
        place = rng.choice(["", f" | {rng.choice(c.orgs)}", " | video link in invite", f" | {c.street}"])
        rows.append(f"  {hour:02d}:{rng.choice(('00', '30'))}-{hour + 1:02d}:00  {what}{place}")
    return _fit(
        f"calendar.list(day={day!r}, owner={c.person} {c.surname})\n{len(rows)} events:",
        rows,
        f"Free slots: {rng.randint(1, 4)} of 30 min or more. Time zone: {c.home}.",
    )


def email_search(rng: random.Random, c: Life, query: str, hit: str | None = None, sender: str = "") -> str:
    """An inbox search: senders, subjects, how long ago, snippets; `hit` is one result's snippet,
    `sender` the first result's sender."""
    rows = []
    count = rng.randint(3, 5)
    where = rng.randrange(count)
    for i in range(count):
        who = sender if sender and i == 0 else rng.choice(everyone(c) + c.orgs)
        subject = rng.choice(
            [
                f"Re: {rng.choice(c.kind['events'])} next week",
                f"{rng.choice(c.orgs)} - {rng.choice(['update', 'invoice', 'question', 'schedule'])}",
                f"Photos from {rng.choice(c.destinations)[0]}",
                f"Fwd: {rng.choice(CHORES)}",
                f"Your order from {rng.choice(SHOPS)} has shipped",
            ]
        )
        snippet = (
            hit
            if hit and i == where
            else rng.choice(
                [
                    f"Just checking whether {rng.choice(WEEKDAYS)} still works for you...",
                    f"Attached is the {rng.choice(['draft', 'quote', 'receipt', 'agenda'])} we talked about.",
                    f"Can we move it to {clock(rng)}? Something came up with {rng.choice(c.orgs)}.",
                    f"Thanks again for {rng.choice(MEAL_WORDS)} at {rng.choice(c.restaurants)}!",
                    f"Your parcel will arrive between {clock(rng, 8, 11)} and {clock(rng, 12, 18)}.",
                ]
            )
        )
        rows.append(f'[{i + 1}] {who} | "{subject}" | {rng.randint(1, 9)}d ago\n    {snippet}')
    return _fit(f"email_search(query={query!r}) -> {count} results", rows)


def flights(rng: random.Random, c: Life, city: str, code: str) -> str:
    """A flight search with a row per option: carrier, number, times, stops, fare."""
    rows = []
    for airline, prefix in rng.sample(c.airlines, 4):
        out = clock(rng, 6, 20)
        rows.append(
            f"  {airline} {prefix}{rng.randint(100, 999)}  dep {out}  "
            f"{rng.choice(['direct', '1 stop', 'direct', '1 stop via ' + rng.choice(DESTINATIONS)[0]])}  "
            f"{rng.randint(1, 9)}h{rng.randint(0, 55):02d}  {price(c, rng, 60, 620)}  "
            f"bag {rng.choice(['included', 'extra ' + price(c, rng, 20, 60)])}"
        )
    return _fit(
        f"bookings.search_flights(from={c.home!r}, to={code!r}) -> {city}, {len(rows)} options, economy:",
        rows,
        "Fares are per person, one way, and may change until booked.",
    )


def hotels(rng: random.Random, c: Life, city: str) -> str:
    rows = [
        f"  {name}  {rng.choice([3, 4, 4, 5])}*  {price(c, rng, 70, 390)}/night  "
        f"rating {rng.randint(70, 96) / 10}  {rng.choice(['free cancellation', 'non-refundable', 'breakfast included'])}"
        f"  {rng.randint(2, 35) / 10} km from centre"
        for name in rng.sample(c.hotels, 4)
    ]
    return _fit(f"bookings.search_hotels(city={city!r}, nights={rng.randint(1, 5)}) -> 4 results:", rows)


def weather(rng: random.Random, c: Life, city: str) -> str:
    rows = [
        f"  {day[:3]}: {rng.choice(WEATHER)}, {rng.randint(-3, 31)}C, wind {rng.randint(3, 40)} km/h, "
        f"rain {rng.randint(0, 90)}%"
        for day in rng.sample(WEEKDAYS, 4)
    ]
    return _fit(
        f"weather.forecast(place={city!r}) ->",
        rows,
        f"Sunrise {clock(rng, 5, 7)}, UV index {rng.randint(1, 8)}.",
    )


def route(rng: random.Random, c: Life, place: str) -> str:
    steps = [
        f"  {i + 1}. {rng.choice(['Head', 'Turn left onto', 'Turn right onto', 'Continue along', 'Take the exit to'])} "
        f"{rng.choice(STREETS)} ({rng.randint(1, 40) / 10} km)"
        for i in range(rng.randint(4, 7))
    ]
    return _fit(
        f"maps.route(from='{c.street}, {c.home}', to={place!r}, mode={rng.choice(['drive', 'transit', 'cycle'])}) -> "
        f"{rng.randint(8, 75)} min, {rng.randint(2, 60)} km",
        steps,
        f"Traffic: {rng.choice(['light', 'moderate', 'heavy near the ring road'])}. Parking at destination: "
        f"{rng.choice(['street', 'car park', 'none nearby'])}.",
    )


def shopping(rng: random.Random, c: Life, product: str, traits: str) -> str:
    rows = [
        f"  {shop}: {word} {product} {rng.randint(2, 9)}00  {price(c, rng, 40, 900)}  "
        f"{traits}: {rng.choice(['good', 'average', 'excellent'])}  delivery {rng.randint(1, 7)} days  "
        f"{rng.randint(30, 4900)} reviews"
        for shop, word in zip(rng.sample(SHOPS, 4), rng.sample(MODEL_WORDS, 4), strict=True)
    ]
    return _fit(f"shopping.compare(query={product!r}) -> {len(rows)} offers, sorted by relevance:", rows)


def web_search(rng: random.Random, c: Life, query: str) -> str:
    """Search results: titles, sites and snippets around the query's words."""
    rows = [
        f"[{i + 1}] {query.capitalize()} - {rng.choice(['guide', 'reviews', 'opening hours', 'prices', 'forum'])} | "
        f"{rng.choice(['citylife', 'travelnotes', 'whichbest', 'localpost', 'askaround'])}.example\n"
        f"    {rng.choice(['Updated', 'Posted', 'Reviewed'])} {rng.randint(2, 30)} days ago. "
        f"{rng.choice(['Most readers recommend', 'Locals prefer', 'Staff suggest', 'The cheapest option is'])} "
        f"{rng.choice([*c.restaurants, *c.hotels, *SHOPS])}; open until {clock(rng, 17, 22)}."
        for i in range(rng.randint(3, 5))
    ]
    return _fit(f"web_search(q={query!r}) -> about {rng.randint(2, 90)},000 results", rows)


def notes(rng: random.Random, c: Life, title: str, lines: list[str]) -> str:
    filler = [f"- {rng.choice(CHORES)}" for _ in range(3)]
    return _fit(
        f"notes.open(title={title!r}) last edited {rng.randint(1, 12)} days ago by {c.person}:",
        [*lines, *filler, f"- ask {rng.choice(everyone(c))} about {rng.choice(c.kind['events'])}"],
    )


def confirmation(rng: random.Random, c: Life, what: str, details: list[str], ref: str) -> str:
    """A booking confirmation: the reference, the details, the small print."""
    return _fit(
        f"bookings.confirm -> CONFIRMED {what}\nReference: {ref}\nLead name: {c.person} {c.surname}",
        [f"  {d}" for d in details],
        f"Free changes until {rng.randint(24, 72)} hours before. Receipt sent to {c.person.lower()}@mailbox.example.",
    )
