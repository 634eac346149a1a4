"""A fourth evaluation set, of facts later corrected (`manage.py corrections`): is the current
value found, and not only the value it replaced? Each of the SESSIONS sessions ("corr-01", …) is an
existing generated session used as filler, its own questions dropped: an odd-numbered one a work
session of the extra split (work-22 … work-31, worksessions.py), an even-numbered one an assistant
session (assist-01 … assist-10, assistant_sessions.py). Into it go 3–4 facts with a later
correction, of kinds that fit the session (a deadline, a port, a pinned version, a reviewer, a
host, a limit, a branch, a meeting, a budget, a code freeze; a flight time, a table, a gate, a
venue, a headcount, an appointment, a quote, a taxi, a check-in date), and 1–2 controls: a fact
said early and later confirmed unchanged, often in a correction's words. The fact is said in one
sitting (by the person, the agent or a tool's output) and corrected one to three sittings later,
at a random place among the filler: by the person, by the person passing on what someone told
them, by a tool's output (an email, a calendar, a commit), or by the person putting right what the
agent had wrong. "Correction", "actually" or "I meant" is in the first kind in even-numbered
sessions, in the last in odd ones, in no other (a fifth of them). In about a third the stale
value is said or used once more before the correction (phrasing: corrections_material.py).

A question asks for the current value: category 9 (correction), its evidence the turn that states
the new value, with `previous` (the value it replaced), `previous_evidence` (the turns that state
it: eval_memory reports how often the evidence comes back ahead of them), `how` (self, relay, tool
or agent) and `sittings_apart`; category 10 (unchanged) for a control, its evidence the statement
and the confirmation. Session n is in the holdout when n is divisible by 3 (3, 6, …, 18), in dev
otherwise (the holdout's assist-03, -06, -09 are the assistant set's holdout too); "extra" is 20
more (21 … 40, on work-32 … work-41 and assist-11 … assist-20). Seeded, standard library only.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import permutations
from typing import Any

from memory.evaluation import assistant_sessions, generated, worksessions
from memory.evaluation import assistant_sessions_material as am
from memory.evaluation import corrections_material as cm
from memory.evaluation.worksessions_material import DOMAINS, PEOPLE

SEED, SESSIONS, SPLITS = "corrections-1", 20, (*generated.SPLITS, "extra")
EXTRA = 20
CORRECTION, UNCHANGED = 9, 10
HOWS = ("self", "relay", "tool", "agent")
WHEN = "%I:%M %p on %d %B, %Y"
WEEKDAYS = am.WEEKDAYS[:6]

in_holdout = generated.in_holdout


def _topics(text: str) -> dict[str, dict]:
    """corrections_material.TOPICS as {name: {"kind": …, key: [alternatives]}}."""
    topics: dict[str, dict] = {}
    for block in text.split("\n== ")[1:]:
        head, *lines = block.strip().splitlines()
        name, kind = head.split()
        topics[name] = {"kind": kind}
        for line in filter(None, lines):
            key, _, rest = line.partition(": ")
            topics[name][key] = [alt.strip() for alt in rest.split(" | ")]
    return topics


TOPICS = _topics(cm.TOPICS)


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


@dataclass
class Cast:
    """Who and what a session talks about, and what its filler already says (`text`)."""

    kind: str
    person: str
    mates: list[str]
    text: str
    slots: dict[str, str]
    life: am.Life | None = None
    taken: set[str] = field(default_factory=set)


@dataclass
class Planted:
    """A fact and its question: its parts (one list of turns a sitting, in order) and sittings."""

    category: int
    question: str
    answer: str
    parts: list[list[dict]]
    sittings: list[int]
    evidence: list[dict]
    stale: list[dict] = field(default_factory=list)
    previous: str = ""
    how: str = ""
    topic: str = ""


def _fresh(rng: random.Random, cast: Cast, options: Sequence[Any], key: Callable[[Any], str] = str) -> Any:
    """An option the filler never names and no other fact of the session uses, where there is one."""
    free = [o for o in options if key(o) not in cast.taken]
    unsaid = [o for o in free if key(o).lower() not in cast.text]
    return rng.choice(unsaid or free)


def _life(cast: Cast) -> am.Life:
    assert cast.life is not None, "an assistant session's fact"
    return cast.life


def _date(d: datetime, day_first: bool = False) -> str:
    return f"{d.day} {d:%B}" if day_first else f"{d:%B} {d.day}"


def _clock(minutes: int, twelve: bool = True) -> str:
    hour, minute = divmod(minutes % 1440, 60)
    if twelve and (hour, minute) == (12, 0):
        return "noon"
    if not twelve:
        return f"{hour:02d}:{minute:02d}"
    return f"{hour % 12 or 12}{f':{minute:02d}' if minute else ''} {'am' if hour < 12 else 'pm'}"


def _set(v: dict[str, str], values: Iterable[str]) -> None:
    v.update(zip(("old", "new", "alt"), values, strict=True))


def _draw(rng: random.Random, name: str, cast: Cast, day: datetime) -> dict[str, str]:
    """The topic's values: {thing}, {old}, {new}, {alt} and its own slots."""
    s, v = cast.slots, dict[str, str]()
    if name in ("deadline", "freeze", "checkin"):
        first, d = name == "checkin", day + timedelta(days=rng.randint(14, 45))
        step = rng.choice([-2, -1, 1, 2]) if first else rng.randint(2, 12)
        days = (d, d + timedelta(days=step), d + timedelta(days=step + rng.choice([5, 7])))
        _set(v, (_date(x, first) for x in days))
        if name == "checkin":
            hotels = [h for h in am.HOTELS if h not in _life(cast).hotels]
            v |= {"thing": _fresh(rng, cast, hotels), "city": rng.choice(_life(cast).destinations)[0]}
        v.setdefault("thing", _fresh(rng, cast, cm.FEATURES) if name == "deadline" else "code freeze")
    elif name == "port":
        ports = rng.sample([8080, 8000, 3000, 5000, 9000, 8888, 4000, 9090, 8443, 9443, 7070, 6060], 3)
        v["thing"] = _fresh(rng, cast, cm.SERVICES)
        _set(v, map(str, ports))
        v["slug"] = v["thing"].replace(" ", "-").lower()
    elif name == "pin":
        a, b, c = rng.randint(1, 9), rng.randint(0, 30), rng.randint(0, 12)
        bumps = [f"{a}.{b}.{c + rng.randint(1, 3)}", f"{a}.{b + 1}.0", f"{a + 1}.0.{rng.randint(0, 2)}"]
        v |= {"thing": _fresh(rng, cast, cm.LIBS), "old": f"{a}.{b}.{c}", "new": rng.choice(bumps)}
        v["alt"] = f"{a}.{b + 2}.1"
    elif name == "reviewer":
        v["thing"] = _fresh(rng, cast, cm.FEATURES)
        _set(v, rng.sample(cast.mates, 3))
    elif name == "branch":
        v["thing"] = _fresh(rng, cast, cm.FEATURES)
        slug = re.sub(r"[^a-z0-9]+", "-", v["thing"].lower()).strip("-")
        who = unicodedata.normalize("NFKD", cast.person).encode("ascii", "ignore").decode().lower()
        v |= {"old": f"feature/{slug}", "alt": f"release/{slug}"}
        v["new"] = rng.choice([f"{slug}-v2", f"integration/{slug}", f"{who}/{slug}"])
    elif name == "host":
        role, v["slug"] = _fresh(rng, cast, cm.HOST_ROLES, key=lambda o: o[0])
        env = rng.choice(["staging", "preprod", "qa"])
        hosts = (
            f"{v['slug']}-{env[:3]}-{n:02d}.{s['project']}.internal" for n in rng.sample(range(1, 13), 3)
        )
        v["thing"] = f"{env} {role}"
        _set(v, hosts)
    elif name in ("limit", "budget", "quote"):
        if name == "limit":
            v["thing"], unit, choices = _fresh(rng, cast, cm.LIMITS, key=lambda o: o[0])
            amounts, fmt = rng.sample(choices, 3), f"{{:,}} {unit}"
        else:
            unit = 500 if name == "budget" else 10
            old = rng.randint(4, 40) * 500 if name == "budget" else rng.randint(30, 400) * 10
            new = max(old + rng.choice([-1, 1]) * rng.randint(1, 8) * unit, 100)
            amounts = [old, new, old + new]
            if name == "budget":
                v["thing"], fmt = _fresh(rng, cast, cm.BUDGETS), rng.choice("$€£") + "{:,}"
            else:
                v["thing"], v["firm"] = _fresh(rng, cast, cm.JOBS, key=lambda o: o[0])
                fmt = s["money"] + "{:,}"
        up = amounts[1] > amounts[0]
        v["moving"], v["moved"] = ("raising", "raised") if up else ("lowering", "lowered")
        if name != "limit":
            v["moved"] = {"budget": ("raised", "cut"), "quote": ("went up", "came down")}[name][not up]
        _set(v, (fmt.format(x) for x in amounts))
    elif name == "meeting":
        slots = rng.sample([(d, h) for d in WEEKDAYS[:5] for h in range(9 * 60, 17 * 60, 30)], 3)
        v["thing"] = _fresh(rng, cast, cm.MEETINGS)
        _set(v, (f"{d} at {_clock(h)}" for d, h in slots))
    elif name in ("flight", "gate"):
        life = _life(cast)
        v["city"] = _fresh(rng, cast, [d[0] for d in am.DESTINATIONS if d not in life.destinations])
        v["airline"], prefix = rng.choice(life.airlines)
        v |= {"thing": v["city"], "flight": f"{prefix} {rng.randint(100, 999)}", "day": rng.choice(WEEKDAYS)}
        if name == "flight":
            old = rng.randint(6 * 12, 21 * 12) * 5
            new = old + rng.choice([-1, 1]) * rng.randint(7, 48) * 5
            _set(v, (_clock(t, False) for t in (old, new, old + (250 if old < 900 else -250))))
        else:
            _set(v, (f"{g}{n}" for g, n in rng.sample([(g, n) for g in "ABCDE" for n in range(1, 40)], 3)))
    elif name in ("table", "taxi"):
        restaurants = [r for r in am.RESTAURANTS if r not in _life(cast).restaurants]
        v["thing"] = _fresh(rng, cast, restaurants) if name == "table" else "airport taxi"
        old = rng.randint(72, 84) * 15 if name == "table" else rng.randint(16, 28) * 15
        times = (old, old + rng.choice([-1, 1]) * rng.randint(2, 6) * 15, old + 8 * 15)
        v["day"] = rng.choice(WEEKDAYS)
        _set(v, map(_clock, times))
    elif name in ("venue", "guests"):
        v["thing"] = _fresh(rng, cast, cm.VENUE_EVENTS if name == "venue" else cm.GUEST_EVENTS).format(**s)
        n, more = rng.randint(6, 24), rng.randint(1, 5)
        counts = (f"{x} people" for x in (n, n + more, n + more + 3))
        _set(v, rng.sample(cm.VENUES, 3) if name == "venue" else counts)
        v["diff"] = cm.DIGITS[more - 1]
    elif name == "appointment":
        thing, v["firm"] = _fresh(rng, cast, cm.APPOINTMENTS, key=lambda o: o[0])
        v["thing"] = thing.format(pet=rng.choice(cm.PETS))
        _set(v, rng.sample(WEEKDAYS, 3))
    return v


def _values(rng: random.Random, name: str, cast: Cast, day: datetime) -> dict[str, str]:
    """The topic's values, none inside another (so a turn's value is never mistaken for another's),
    and the people, channel, commits and references its scripts may name."""
    while True:
        v = _draw(rng, name, cast, day)
        if not any(a.lower() in b.lower() for a, b in permutations((v["old"], v["new"], v["alt"]), 2)):
            break
    cast.taken.add(v["thing"])
    others = [m for m in cast.mates if m not in (v["old"], v["new"], v["alt"])]
    mate, mate2 = rng.sample(others, 2)
    hexes = ["".join(rng.choice("0123456789abcdef") for _ in range(7)) for _ in range(3)]
    ref = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
    v = {**cast.slots, "mate": mate, "mate2": mate2, "channel": rng.choice(cm.CHANNELS), "ref": ref} | v
    v |= {"sha": hexes[0], "sha2": hexes[1], "sha3": hexes[2], "pr": str(rng.randint(100, 2999))}
    return v | {"Thing": cap(v["thing"]), "Old": cap(v["old"])}


def _say(rng: random.Random, topic: dict, script: str, slots: dict[str, str], cast: Cast) -> list[dict]:
    """A script's turns, its slots filled ({subj} freshly chosen from the topic's)."""
    subj = rng.choice(topic["subj"]).format(**slots)
    slots = {**slots, "subj": subj, "Subj": cap(subj)}
    turns = []
    for piece in script.split(" >> "):
        role, _, text = piece.partition(":")
        name = {"u": cast.person, "b": "assistant"}.get(role)
        if name is None:
            name, _, text = text.partition(":")
        text = text.format(**slots).replace("¶", "\n")
        role = {"u": "user", "b": "assistant"}.get(role, "tool")
        turns.append(
            {"speaker": name, "dia_id": "", "text": text, "role": role, "name": name, "date_time": ""}
        )
    return turns


def _statement(rng: random.Random, topic: dict, v: dict[str, str], cast: Cast, by: str) -> list[dict]:
    """The fact said by the person, the agent or a tool's output."""
    script = (
        rng.choice(topic["tool"]) if by == "tool" else f"{by[0].replace('a', 'b')}:{rng.choice(topic[by])}"
    )
    if by != "agent" and rng.random() < 0.6:
        script += f" >> b:{rng.choice(cm.ACK)}"
    return _say(rng, topic, script, v, cast)


def _apart(rng: random.Random, count: int) -> tuple[int, int]:
    """The sittings of a statement and of its correction (or confirmation): one to three apart."""
    gap = min(rng.choices([1, 2, 3], weights=[5, 3, 2])[0], count - 1)
    start = rng.randint(0, count - 1 - gap)
    return start, start + gap


def _correction(
    rng: random.Random, name: str, cast: Cast, dates: list[datetime], how: str, remind: bool, keyword: bool
) -> Planted:
    topic = TOPICS[name]
    first, later = _apart(rng, len(dates))
    v = _values(rng, name, cast, dates[first])
    by = {"self": "user", "agent": "agent"}.get(how) or rng.choice(["user", "agent", "tool"])
    stated = _statement(rng, topic, v, cast, by)
    if how == "self":
        plain = rng.choice(topic["change"] if rng.random() < 0.6 else cm.PLAIN_SELF)
        script = f"u:{rng.choice(cm.KEYWORD_SELF) if keyword else plain}"
        script += f" >> b:{rng.choice(cm.ACK)}" if rng.random() < 0.7 else ""
    elif how == "relay":
        said = rng.choice(topic["change"] if rng.random() < 0.6 else cm.PLAIN_SELF)
        script = f"u:{rng.choice(cm.RELAY)}{cap(said)} >> b:{rng.choice(cm.ACK)}"
    elif how == "tool":
        script = f"{rng.choice(topic['report'])} >> b:{rng.choice(cm.REPORTED)}"
    else:
        said = rng.choice(cm.KEYWORD_AGENT if keyword else cm.PLAIN_AGENT)
        script = f"u:{said} >> b:{rng.choice(cm.SORRY)}"
    corrected = _say(rng, topic, script, v, cast)
    parts, sittings = [stated], [first]
    if remind:
        parts.append(_say(rng, topic, rng.choice(topic["use"]), v, cast))
        sittings.append(rng.randint(first, later))
    parts.append(corrected)
    sittings.append(later)
    evidence = [t for t in corrected if v["new"] in t["text"]]
    stale = [t for part in parts[:-1] for t in part if v["old"] in t["text"]]
    assert evidence and stale and not any(v["new"] in t["text"] for part in parts[:-1] for t in part), (
        name,
        v,
    )
    question = rng.choice(topic["ask"]).format(**v)
    return Planted(CORRECTION, question, v["new"], parts, sittings, evidence, stale, v["old"], how, name)


def _control(rng: random.Random, name: str, cast: Cast, dates: list[datetime]) -> Planted:
    """A fact said early and later confirmed unchanged: by the person (sometimes in a correction's
    words), by the agent on checking, or by the person turning down the agent's offer to change it."""
    topic = TOPICS[name]
    first, later = _apart(rng, len(dates))
    v = _values(rng, name, cast, dates[first])
    stated = _statement(rng, topic, v, cast, rng.choice(["user", "agent", "tool"]))
    how = rng.choice(["keyword", "plain", "agent", "declined"])
    if how == "keyword":
        script = f"u:{rng.choice(cm.CONFIRM_KEYWORD)} >> b:{rng.choice(cm.ACK)}"
    elif how == "plain":
        script = f"u:{rng.choice(cm.CONFIRM_PLAIN)}"
    elif how == "agent":
        script = f"u:Can you check {{subj}} again? >> b:{rng.choice(cm.CONFIRM_AGENT)}"
    else:
        script = f"b:{rng.choice(cm.PROPOSE)} >> u:{rng.choice(cm.DECLINE)}"
    confirmed = _say(rng, topic, script, v, cast)
    evidence = [t for t in (*stated, *confirmed) if v["old"] in t["text"]]
    assert len(evidence) >= 2 and not any(v["new"] in t["text"] for t in (*stated, *confirmed)), (name, v)
    question = rng.choice(topic["ask"]).format(**v)
    return Planted(
        UNCHANGED, question, v["old"], [stated, confirmed], [first, later], evidence, how=how, topic=name
    )


def _source(number: int) -> tuple[str, dict]:
    """Session `number`'s filler: a work session of the extra split, or an assistant session."""
    if number % 2:
        return "work", worksessions.session(worksessions.SESSIONS + (number + 1) // 2)
    return "assistant", assistant_sessions.session(number // 2)


def _cast(rng: random.Random, kind: str, source: dict, text: str) -> Cast:
    person = source["conversation"]["speaker_a"]
    if kind == "work":
        domain = next(d for d in DOMAINS if d["kind"] == source["domain"])
        project = next((p for p in domain["projects"] if p in text), domain["projects"][0])
        mates = rng.sample([p for p in PEOPLE if p != person], 6)
        return Cast(kind, person, mates, text, {"project": project, "person": person})
    number = int(source["sample_id"].split("-")[1])
    c = am.life(random.Random(f"{assistant_sessions.SEED}-{number}"), number)
    assert c.person == person, (c.person, person)
    slots = {"person": person, "partner": c.partner, "mother": c.mother, "sibling": c.sibling}
    slots |= {"kid": (c.children or [c.sibling])[0], "friend": c.friends[0], "home": c.home}
    slots |= {"street": c.street, "money": c.money}
    return Cast(kind, person, [c.sibling, *c.friends, *c.colleagues], text, slots, c)


def _boundary(rows: list[dict], i: int) -> bool:
    """Whether a fact's turns may go before row i: at either end, or where an episode starts (the
    person's turn, or the agent's tool call, after a turn not the person's and not a question)."""
    if i in (0, len(rows)):
        return True
    before, turn = rows[i - 1], rows[i]
    starts = turn["role"] == "user" or (turn["role"] == "assistant" and turn["text"].startswith("["))
    return starts and before["role"] != "user" and not before["text"].rstrip().endswith("?")


def _place(rng: random.Random, conversation: dict, numbers: list[int], facts: list[Planted]) -> dict:
    """The conversation with each fact's parts at random boundaries of their sittings (in order
    within a sitting), every turn re-numbered; an inserted turn takes the time of the turn before."""
    sittings = [conversation[f"session_{n}"] for n in numbers]
    bounds = [[i for i in range(len(rows) + 1) if _boundary(rows, i)] for rows in sittings]
    inserts: list[dict[int, list[list[dict]]]] = [{} for _ in sittings]
    for fact in facts:
        last = (-1, 0)
        for s, part in zip(fact.sittings, fact.parts, strict=True):
            later = [i for i in bounds[s] if s != last[0] or i > last[1]]
            at = rng.choice(later or [last[1]])
            inserts[s].setdefault(at, []).append(part)
            last = (s, at)
    out = {k: v for k, v in conversation.items() if not re.fullmatch(r"session_\d+", k)}
    for s, (n, rows) in enumerate(zip(numbers, sittings, strict=True)):
        turns = []
        for i in range(len(rows) + 1):
            stamp = rows[i - 1]["date_time"] if i else conversation[f"session_{n}_date_time"]
            for part in inserts[s].get(i, []):
                for turn in part:
                    turn["date_time"] = stamp
                    turns.append(turn)
            if i < len(rows):
                turns.append(dict(rows[i]))
        for k, turn in enumerate(turns, start=1):
            turn["dia_id"] = f"D{n}:{k}"
        out[f"session_{n}"] = turns
    return out


def _qa(fact: Planted, ids: dict[int, str]) -> dict:
    item = {
        "question": fact.question,
        "answer": fact.answer,
        "evidence": [ids[id(t)] for t in fact.evidence],
        "category": fact.category,
        "how": fact.how,
        "topic": fact.topic,
    }
    if fact.category == CORRECTION:
        item["previous"] = fact.previous
        item["previous_evidence"] = [ids[id(t)] for t in fact.stale]
        item["sittings_apart"] = fact.sittings[-1] - fact.sittings[0]
    return item


def session(number: int) -> dict:
    """Session `number` (1..SESSIONS) as a LoCoMo sample, its questions the planted facts'."""
    rng = random.Random(f"{SEED}-{number}")
    kind, source = _source(number)
    conversation = source["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k in conversation if re.fullmatch(r"session_\d+", k))
    text = " ".join(t["text"] for n in numbers for t in conversation[f"session_{n}"]).lower()
    cast = _cast(rng, kind, source, text)
    dates = [datetime.strptime(conversation[f"session_{n}_date_time"], WHEN) for n in numbers]
    corrections, controls = 3 + (rng.random() < 0.3), 1 + (rng.random() < 0.15)
    names = rng.sample([n for n, t in TOPICS.items() if t["kind"] == kind], corrections + controls)
    hows = rng.sample(HOWS, corrections)
    reminded = set(rng.sample(range(corrections), 1 if corrections == 3 else rng.choice([1, 2])))
    facts = [
        _correction(rng, name, cast, dates, how, i in reminded, (how == "self") == (number % 2 == 0))
        for i, (name, how) in enumerate(zip(names, hows, strict=False))
    ]
    facts += [_control(rng, name, cast, dates) for name in names[corrections:]]
    placed = _place(rng, conversation, numbers, facts)
    ids = {id(t): t["dia_id"] for n in numbers for t in placed[f"session_{n}"]}
    return {
        "sample_id": f"corr-{number:02d}",
        "source": source["sample_id"],
        "kind": kind,
        "conversation": placed,
        "qa": [_qa(f, ids) for f in facts],
    }


def build(split: str = "all") -> list[dict]:
    """The sessions of a split: "dev", "holdout" or "all" (the set), or "extra": EXTRA more of the
    same generator, on fillers the set does not use (work-32 … work-41, assist-11 … assist-20)."""
    if split == "extra":
        return [session(n) for n in range(SESSIONS + 1, SESSIONS + EXTRA + 1)]
    return generated.build(split, SESSIONS, session)
