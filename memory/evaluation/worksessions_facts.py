"""The facts planted in an agent work session, each with its question (worksessions.py places them).

A fact is one or more parts (each a short run of turns, placed in the session in order, a later part
well after an earlier one) and a question whose evidence is the marked turns. Categories as
locomo.CATEGORIES: 1 multi-hop, 2 temporal, 4 single-hop, 6 paraphrase (the question's words are
not the evidence's), 7 first-person (what the person said), 8 decision. A temporal answer is a day
and is filled in once the turns are dated; a multi-hop answer is its parts joined by "; ", each in
one of the evidence turns. Standard library only.
"""

from __future__ import annotations

import random

from memory.evaluation import generated
from memory.evaluation import worksessions_text as tx
from memory.evaluation.worksessions_material import ENVS, TEAMS

Fact = generated.Fact


def user(ctx: tx.Ctx, text: str) -> dict:
    return {"role": "user", "name": ctx.person, "text": text}


def bot(text: str) -> dict:
    return {"role": "assistant", "name": "assistant", "text": text}


def tool(name: str, text: str) -> dict:
    return {"role": "tool", "name": name, "text": text}


def _one(category: int, question: str, answer: str, turns: list[dict], *marked: dict) -> Fact:
    return Fact(category, question, answer, [turns], list(marked or turns))


# First person (7): what the person said they prefer, avoid, want named, or corrected.
def prefer(rng, ctx, choice):
    concern, _alias, good, bad, why = choice
    t = user(
        ctx,
        rng.choice(
            [
                f"For {concern}, I'd rather we use {good} than {bad} — {why}.",
                f"Small thing: on {concern} I prefer {good}. {why[0].upper()}{why[1:]}.",
            ]
        ),
    )
    return _one(7, f"What did I say I prefer for {concern}?", good, [t])


def avoid(rng, ctx, choice):
    concern, alias, _good, bad, why = choice
    t = user(ctx, f"Please don't pull in {bad} anywhere in {ctx.project}; {why}.")
    q = rng.choice(
        [
            f"What did I ask you not to use for {alias}?",
            f"Which library did I tell you to keep out of the project for {concern}?",
        ]
    )
    return _one(7, q, bad, [t])


def correction(rng, ctx, _choice):
    thing, wrong, right = rng.choice(
        [
            (
                "container registry",
                f"ghcr.io/acme/{ctx.project}",
                f"registry.{rng.choice(['int', 'corp'])}.acme.io/{ctx.project}",
            ),
            (
                "bucket",
                f"{ctx.project}-staging",
                f"{ctx.project}-stage-{rng.choice(['eu', 'us', 'ap'])}{rng.randint(1, 3)}",
            ),
            ("base branch", "develop", f"release/{rng.randint(2, 9)}.{rng.randint(0, 20)}"),
            ("Slack channel", f"#{ctx.project}", f"#{ctx.project}-{rng.choice(['alerts', 'oncall', 'ops'])}"),
        ]
    )
    a = bot(f"I'll point the {thing} at {wrong} then.")
    b = user(ctx, f"No — not {wrong}, that one is being retired. Use {right}.")
    return _one(7, f"Which {thing} did I tell you to use instead of the one you suggested?", right, [a, b], b)


def naming(rng, ctx, comp):
    name = f"{tx.snake(comp[0])}_{rng.choice(['core', 'v2', 'engine', 'kit', 'ops'])}"
    t = user(ctx, f"Call the new module for the {comp[0]} `{name}` — nothing with utils in the name, please.")
    return _one(7, f"What did I want the new module for the {comp[1]} to be called?", name, [t])


# Decisions (8).
def decide(rng, ctx, choice):
    concern, alias, good, bad, why = choice
    q = rng.choice([f"What did we decide about {concern}?", f"What did we settle on for {alias}?"])
    if rng.random() < 0.5:
        t = user(ctx, f"OK, decision made: {good} for {concern}, not {bad}. Reason: {why}.")
        return _one(8, q, good, [t])
    a = bot(
        f"On {concern} there are two options: {good}, or {bad} as the old code did. "
        f"I'd lean to {good}, since {why}."
    )
    b = user(
        ctx,
        rng.choice(
            [
                "Agreed, go with your first option.",
                "Yes, let's do what you lean towards.",
                "Fine by me — the first one.",
            ]
        ),
    )
    return _one(8, q, good, [a, b])


def cadence(rng, ctx, _choice):
    day = rng.choice(["Tuesday", "Wednesday", "Thursday"])
    t = user(
        ctx,
        f"Let's settle the releases: we ship on {day}s, and nothing merges after {rng.randint(2, 5)} pm the day before.",
    )
    return _one(
        8,
        rng.choice(
            ["What did we decide about when to release?", "Which day of the week did we agree to ship on?"]
        ),
        day,
        [t],
    )


# Paraphrase (6): the question says it in other words.
PARAPHRASES = [
    (
        "The {c} was timing out under load, so I raised its timeout in {file} from 30 to {n} seconds.",
        "How long may the {a} wait now before it gives up?",
        "{n} seconds",
    ),
    (
        "The {c} peaked at {m} GB RSS during the run; I set the container limit to {n} GB.",
        "How much RAM does the {a} get after the spike?",
        "{n} GB",
    ),
    (
        "{mate} on the {team} team owns the {c}; route questions about it to them.",
        "Who is responsible for the {a}?",
        "{mate}",
    ),
    (
        "Entries in the {c} cache now expire after {n} minutes instead of an hour.",
        "How long are stored results for the {a} kept before they go stale?",
        "{n} minutes",
    ),
    (
        "The {c} now retries {n} times with exponential backoff starting at {ms} ms.",
        "How many attempts does the {a} make when a call fails?",
        "{n} times",
    ),
    (
        "After the change the {c} handles {n} {units}, up from {m}.",
        "What throughput does the {a} reach now?",
        "{n} {units}",
    ),
    (
        "FYI the {env} database password rotates every {n} days; it lives in Vault under secret/{project}/{env}/db.",
        "How often do the credentials for the {env} data store change?",
        "{n} days",
    ),
]


def paraphrase(rng, ctx, comp, template):
    said, asked, answer = template
    slots = {
        "c": comp[0],
        "a": comp[1],
        "file": rng.choice(ctx.domain["files"]),
        "n": rng.randint(4, 90),
        "m": rng.randint(2, 3),
        "mate": rng.choice(ctx.mates[:-1]),
        "team": rng.choice(TEAMS),
        "units": ctx.domain["units"],
        "ms": rng.choice([50, 100, 200, 250, 500]),
        "env": rng.choice(ENVS),
        "project": ctx.project,
    }
    if "timing out" in said:
        slots["n"] = rng.randint(45, 180)
    if "GB" in said:
        slots["n"] = slots["m"] + rng.randint(2, 6)
    if "up from" in said:
        slots["m"], slots["n"] = rng.randint(100, 900), rng.randint(1000, 4000)
    text = said.format(**slots)
    t = user(ctx, text) if "{mate}" in said or "FYI" in said else bot(text)
    return _one(6, asked.format(**slots), answer.format(**slots), [t])


# Multi-hop (1): two or more turns far apart.
def plan_outcome(rng, ctx, comp):
    tasks = rng.sample(ctx.domain["tasks"], 2)
    before, after = rng.randint(200, 900), rng.randint(20, 190)
    a = bot(
        f"Plan for the {comp[0]}: first {tasks[0]}, then {tasks[1]}, and measure p95 latency before and after."
    )
    b = bot(f"Numbers are in for that work on the {comp[0]}: p95 went from {before} ms to {after} ms.")
    return Fact(
        1,
        f"What was the first step of the plan for the {comp[1]}, and what p95 latency did it end with?",
        f"{tasks[0]}; {after} ms",
        [[a], [b]],
        [a, b],
    )


def error_fix(rng, ctx, error):
    exc, message, path = error
    cause = rng.choice(
        [
            "a field renamed by the upstream team",
            "a stale cache entry from the old schema",
            "a race between two workers",
            "an empty response the code never expected",
            "a config default that differs between environments",
        ]
    )
    fix = rng.choice(
        [
            "a guard and a regression test",
            "a schema check at the boundary",
            "a lock around the write",
            "an explicit default in the config",
            "a retry with a fresh connection",
        ]
    )
    call = bot(f"[bash] running the {path.rsplit('/', 1)[-1]} path again with the failing input")
    out = tool("bash", tx.traceback(rng, ctx, exc, message, path))
    later = bot(f"Found it: that crash in {path} came from {cause}. Fixed with {fix}.")
    return Fact(
        1,
        f"What error message did {path} fail with, and how did we fix it?",
        f"{message}; {fix}",
        [[call, out], [later]],
        [out, later],
    )


def todo_members(rng, ctx, tasks):
    turns = [
        user(
            ctx,
            rng.choice(
                [
                    "Put this on the list for later: {t}.",
                    "Add to the later list: {t}.",
                    "Not now, but remember for later: {t}.",
                ]
            ).format(t=t),
        )
        for t in tasks
    ]
    return Fact(
        1,
        "What have I asked you to put on the list for later?",
        "; ".join(tasks),
        [[t] for t in turns],
        turns,
    )


def owner_review(rng, ctx, comp):
    mate, pr = rng.choice(ctx.mates[:-1]), rng.randint(100, 4000)
    a = user(ctx, f"If you touch the {comp[0]}, {mate} has to review it — it's their code.")
    b = bot(f"{mate} approved PR #{pr}; merging it now.")
    return Fact(
        1,
        f"Which pull request did the person who has to review the {comp[1]} approve, and who is it?",
        f"#{pr}; {mate}",
        [[a], [b]],
        [a, b],
    )


# Temporal (2): the answer is the day of the evidence turn (filled in when dated).
def deploy_failed(rng, ctx, error):
    env = rng.choice(["staging", "preprod", "qa"])
    call = bot(f"[bash] ./scripts/deploy.sh {env}")
    out = tool(
        "bash",
        f"$ ./scripts/deploy.sh {env}\nbuilding {ctx.project} ...\nrolling out to {env}\n"
        f"ERROR: rollout aborted: {error[1]}\nexit status 1",
    )
    short = " ".join(error[1].replace('"', "").split()[:5])
    return _one(
        2, f"When did the {env} deploy abort with the error that begins {short}?", "", [call, out], out
    )


def migration(rng, ctx, _):
    name = rng.choice(["add_tenant_column", "drop_legacy_flags", "backfill_ref_codes", "split_address_table"])
    t = bot(f"Migration {rng.randint(10, 99):04d}_{name} is applied to staging; row counts match.")
    return _one(2, f"On which day did the {name} migration go onto staging?", "", [t])


def joined(rng, ctx, _):
    mate = ctx.mates[-1]
    t = user(ctx, f"{mate} starts on the team today; can you give them read access to the repo?")
    return _one(2, f"When did {mate} join the team?", "", [t])


# Single-hop (4).
def port(rng, ctx, comp):
    p = rng.choice([8081, 8443, 9090, 5050, 7070, 9443, 3001])
    t = bot(f"The {comp[0]} listens on port {p} in staging.")
    return _one(4, f"Which port does the {comp[0]} listen on in staging?", str(p), [t])


def bucket(rng, ctx, _):
    name = f"s3://{ctx.project}-{rng.choice(['raw', 'exports', 'archive'])}-{rng.randint(10, 99)}"
    t = user(ctx, f"Nightly exports go to {name}, not the shared bucket.")
    return _one(4, "Where do the nightly exports go?", name, [t])


def ticket(rng, ctx, _):
    key = f"{ctx.project.split('-')[0][:4].upper()}-{rng.randint(100, 999)}"
    t = user(ctx, f"The ticket for all of this is {key}; mention it in each commit message.")
    return _one(4, "Which ticket should the commit messages mention?", key, [t])


def facts_for(rng: random.Random, ctx: tx.Ctx) -> list[Fact]:
    """A session's facts: about 17, of every category."""
    d = ctx.domain
    choices = rng.sample(d["choices"], len(d["choices"]))
    comps = rng.sample(d["components"], len(d["components"]))
    errors = rng.sample(d["errors"], len(d["errors"]))
    facts = [
        prefer(rng, ctx, choices[0]),
        avoid(rng, ctx, choices[1]),
        correction(rng, ctx, None),
        decide(rng, ctx, choices[2]),
        decide(rng, ctx, choices[3]),
    ]
    if rng.random() < 0.5:
        facts.append(prefer(rng, ctx, choices[4]))
    else:
        facts.append(naming(rng, ctx, comps[5]))
    facts.append(decide(rng, ctx, choices[5]) if rng.random() < 0.5 else cadence(rng, ctx, None))
    for comp, template in zip(comps[:3], rng.sample(PARAPHRASES, 3), strict=True):
        facts.append(paraphrase(rng, ctx, comp, template))
    facts += [
        plan_outcome(rng, ctx, comps[3]),
        error_fix(rng, ctx, errors[0]),
        owner_review(rng, ctx, comps[4]),
    ]
    facts.append(todo_members(rng, ctx, rng.sample(d["tasks"], 3)))
    facts += [deploy_failed(rng, ctx, errors[1]), migration(rng, ctx, None), joined(rng, ctx, None)]
    facts += [port(rng, ctx, comps[rng.randint(0, 5)]), rng.choice([bucket, ticket])(rng, ctx, None)]
    return facts
