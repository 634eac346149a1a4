"""A second evaluation set, of agent work sessions (`manage.py worksessions`): a person directing a
coding agent through a project — tool calls and their long outputs, code, failing tests and stack
traces, plans, decisions, the person's preferences and corrections — in LoCoMo's JSON format, so
`manage.py eval_memory --data FILE` scores it as it scores LoCoMo (docs/evaluation.md, "The second
set: agent work sessions").

Sessions are numbered 1..SESSIONS; each is one conversation ("work-01", …) of 300–1,000 turns over
several sittings (work days), each turn with its role (user, assistant, tool), its name (the
person, "assistant", or the tool) and its own time. Most turns are routine work drawn from the same
project vocabulary as the facts (worksessions_material.py, worksessions_text.py); about 17 facts a
session are planted among them, each with a question whose evidence turns are labelled
(worksessions_facts.py).

The split is a fixed rule: session n is in the holdout when n is divisible by 3 (3, 6, 9, …), in
dev otherwise. The holdout is for a final check of a ranking already chosen; nothing is tuned or
measured on it. Everything is seeded: the same output on every run, standard library only.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from memory.evaluation import generated
from memory.evaluation import worksessions_facts as wf
from memory.evaluation import worksessions_text as tx
from memory.evaluation.worksessions_material import DOMAINS, PEOPLE, SMALL_TALK_ASSISTANT, SMALL_TALK_USER

SEED = "worksessions-1"
SESSIONS = 21
# The "extra" split: this many more sessions after the set's (work-22 … work-45), drawn by the same
# generator with their own seeds. Not part of the set ("all" is 1..21): a larger sample of sessions
# of the same kind that no ranking has met, for when the holdout has been seen (first generated and
# run on 6 December, docs/evaluation.md).
EXTRA = 24
SPLITS = (*generated.SPLITS, "extra")
MIN_TURNS, MAX_TURNS = 300, 1000


in_holdout = generated.in_holdout


def _filler(rng: random.Random, ctx: tx.Ctx, tasks: list[str]) -> list[dict]:
    """One episode of routine work: a request, a file read, a test run, a grep, small talk…"""
    d = ctx.domain
    f, t = rng.choice(d["files"]), rng.choice(d["tests"])
    comp = rng.choice(d["components"])[0]
    concern, _alias, good, bad, _why = rng.choice(d["choices"])
    concern = concern.removeprefix("the ")
    code_files = [p for p in d["files"] if p.endswith((".py", ".ts", ".tsx", ".go", ".tf"))]
    kind = rng.choices(
        ["request", "read", "tests", "fail", "grep", "git", "deps", "talk", "ci", "edit", "remark", "deploy"],
        weights=[10, 14, 12, 5, 6, 6, 3, 10, 4, 10, 10, 3],
    )[0]
    if kind == "request":
        return [
            wf.user(
                ctx,
                rng.choice(
                    [
                        "Next, can you {t}?",
                        "Could you {t} in {f}?",
                        "Let's {t}.",
                        "When you're done there: {t}, please.",
                    ]
                ).format(t=rng.choice(tasks), f=f),
            ),
            wf.bot(
                rng.choice(
                    [
                        f"Sure. I'll start by reading {f}.",
                        f"On it — {f} first, then the tests.",
                        f"OK. That touches the {comp}; I'll check {t} as well.",
                    ]
                )
            ),
        ]
    if kind == "read":
        f = rng.choice(code_files)
        return [
            wf.bot(f"[read_file {f}]"),
            wf.tool("read_file", tx.code(rng, ctx, f)),
            wf.bot(
                rng.choice(
                    [
                        f"The {comp} logic lives in {f}; the limit is hard-coded there.",
                        f"{f} is shorter than I thought. Nothing about {concern} in it yet.",
                        "I see where the loop is. Editing next.",
                    ]
                )
            ),
        ]
    if kind == "tests":
        return [
            wf.bot(f"[bash] running {t}"),
            wf.tool("bash", tx.test_log(rng, ctx, t)),
            wf.bot(rng.choice(["All green.", f"{t} passes.", "Passing; moving on.", "Good, nothing broke."])),
        ]
    if kind == "fail":
        return [
            wf.bot(f"[bash] running {t}"),
            wf.tool("bash", tx.test_log(rng, ctx, t, failing=tx.assertion(rng, ctx, t))),
            wf.bot(f"One assertion in {t} is off by a little; the fixture is stale. Updating it."),
            wf.tool("edit_file", f"Applied edit to {t} (+{rng.randint(1, 6)} -{rng.randint(1, 6)})"),
            wf.bot(f"[bash] running {t}"),
            wf.tool("bash", tx.test_log(rng, ctx, t)),
        ]
    if kind == "grep":
        term = rng.choice([tx.snake(comp), tx.pkg(good), tx.pkg(bad), "TODO", "timeout", "retries"])
        return [wf.bot(f"[bash] rg -n '{term}'"), wf.tool("bash", tx.grep(rng, ctx, term))]
    if kind == "git":
        return [wf.bot("[bash] git status / log"), wf.tool("bash", tx.git(rng, ctx))]
    if kind == "deps":
        return [
            wf.bot("[bash] listing the installed packages"),
            wf.tool("bash", tx.install(rng, ctx)),
            wf.bot(f"{tx.pkg(good)} and {tx.pkg(bad)} are both in the tree; one of them only transitively."),
        ]
    if kind == "talk":
        return [wf.user(ctx, rng.choice(SMALL_TALK_USER)), wf.bot(rng.choice(SMALL_TALK_ASSISTANT))]
    if kind == "ci":
        return [wf.tool("ci", tx.ci(rng, ctx))]
    if kind == "edit":
        return [
            wf.bot(
                f"[edit_file {f}] {rng.choice(['rename the helper', 'extract the loop', 'add the type hints', 'drop the dead branch'])} in the {comp}"
            ),
            wf.tool("edit_file", f"Applied edit to {f} (+{rng.randint(1, 40)} -{rng.randint(0, 30)})"),
        ]
    if kind == "deploy":
        return [wf.bot("[bash] ./scripts/deploy.sh dev"), wf.tool("bash", tx.deploy_ok(rng, ctx, "dev"))]
    return [
        rng.choice(
            [
                wf.bot(
                    f"Note: the {concern} code in {f} still goes through {tx.pkg(bad)} in one place; I left it alone."
                ),
                wf.bot(f"The {comp} has no tests for the error path; I'll add two."),
                wf.user(
                    ctx,
                    f"The {tx.pkg(good)} changelog mentions something about the {comp}, maybe worth a look.",
                ),
                wf.bot(f"{f} mixes {concern} concerns with the {comp}; a split would help, but not today."),
                wf.user(
                    ctx, f"{rng.choice(ctx.mates[:-1])} asked whether the {comp} change lands this week."
                ),
            ]
        )
    ]


def _place(rng: random.Random, episodes: list[list[dict]], facts: list[wf.Fact]) -> list[dict]:
    """The episodes with each fact's parts between them; a fact's later parts come well after its
    first (at least a fifth of the session apart)."""
    slots: dict[int, list[list[dict]]] = {}
    n = len(episodes)
    for fact in facts:
        k = len(fact.parts)
        if k == 1:
            where = [rng.randint(1, n)]
        else:
            gap = n // 5
            start = rng.randint(1, max(1, n - gap * (k - 1)))
            where = [start]
            for left in range(k - 2, -1, -1):
                where.append(rng.randint(where[-1] + gap, min(n - gap * left, where[-1] + gap * 2)))
        for at, part in zip(where, fact.parts, strict=True):
            slots.setdefault(at, []).append(part)
    turns: list[dict] = []
    for i in range(n + 1):
        for part in slots.get(i, []):
            turns += part
        if i < n:
            turns += episodes[i]
    return turns


def session(number: int) -> dict:
    """Session `number` as a LoCoMo sample (with per-turn role, name and date_time)."""
    rng = random.Random(f"{SEED}-{number}")
    domain = DOMAINS[(number - 1) % len(DOMAINS)]
    people = rng.sample(PEOPLE, 5)
    ctx = tx.Ctx(
        domain=domain,
        project=domain["projects"][(number - 1) // len(DOMAINS) % 3],
        person=people[0],
        mates=people[1:],
        branch=f"{people[0].lower()}/{rng.choice(domain['tasks']).split()[0]}-{rng.randint(1, 99)}",
    )
    ctx.versions = {
        tx.pkg(lib): f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}" for lib in tx.libs(ctx)
    }
    facts = wf.facts_for(rng, ctx)
    reserved = {
        t for f in facts for part in f.parts for turn in part for t in domain["tasks"] if t in turn["text"]
    }
    tasks = [t for t in domain["tasks"] if t not in reserved] or domain["tasks"]
    target = rng.randint(MIN_TURNS + 40, MAX_TURNS - 100)
    fact_turns = sum(len(p) for f in facts for p in f.parts)
    episodes: list[list[dict]] = []
    while sum(map(len, episodes)) + fact_turns < target:
        episodes.append(_filler(rng, ctx, tasks))
    turns = _place(rng, episodes, facts)
    # Sittings: work days of about 60–160 turns, a few days apart, each turn a minute or two on.
    when = datetime(2023, 9, 4, 9) + timedelta(days=rng.randint(0, 400))
    conversation: dict = {"speaker_a": ctx.person, "speaker_b": "assistant"}
    sitting, i = 0, 0
    while i < len(turns):
        sitting += 1
        size = rng.randint(60, 160)
        if len(turns) - (i + size) < 40:
            size = len(turns) - i
        when = when.replace(hour=rng.randint(8, 14), minute=rng.randint(0, 59)) + timedelta(
            days=rng.randint(1, 5)
        )
        conversation[f"session_{sitting}_date_time"] = generated.date_time(when)
        at, rows = when, []
        for k, turn in enumerate(turns[i : i + size], start=1):
            at += timedelta(seconds=rng.randint(5, 150))
            turn["dia_id"], turn["_day"] = f"D{sitting}:{k}", generated.day_of(at)
            rows.append(generated.row(turn, at))
        conversation[f"session_{sitting}"] = rows
        i += size
    qa = generated.qa(facts)
    return {
        "sample_id": f"work-{number:02d}",
        "domain": domain["kind"],
        "conversation": conversation,
        "qa": qa,
    }


def build(split: str = "all") -> list[dict]:
    """The sessions of a split: "dev", "holdout" or "all" (the set), or "extra" (the EXTRA after it)."""
    if split == "extra":
        return [session(n) for n in range(SESSIONS + 1, SESSIONS + EXTRA + 1)]
    return generated.build(split, SESSIONS, session)
