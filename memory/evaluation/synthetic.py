"""A deterministic synthetic conversation: a person directing an agent through project work.

The person's turns are short requests; the assistant's are reports of work of three to seven
sentences with names, files, numbers and causes, so they look like an agent's real replies to the
summariser and to the embedding model. `conversation` can plant given sentences (eval_compaction's
constraints) in the person's turns; `chatter` and `questions` feed the benchmarks.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

SERVICES = [
    "the invoice export",
    "the login flow",
    "the nightly ETL job",
    "the search indexer",
    "the notification service",
    "the reporting dashboard",
    "the payments webhook",
    "the mobile sync API",
    "the CSV importer",
    "the onboarding emails",
    "the audit log",
    "the rate limiter",
]
FILES = [
    "exporter.py",
    "auth/views.py",
    "etl/pipeline.py",
    "search/indexer.py",
    "notify/tasks.py",
    "reports/queries.sql",
    "webhooks/stripe.py",
    "sync/api.py",
    "importers/csv.py",
    "emails/templates/welcome.html",
    "audit/models.py",
    "middleware/ratelimit.py",
]
PEOPLE = ["Marta", "Jonas", "Aiko", "Dev", "Lucía", "Tomasz", "Grace", "Omar"]
_CAUSES = [
    "a missing index on the created_at column",
    "a race between the cache refresh and the write",
    "an off-by-one in the pagination cursor",
    "a timezone conversion applied twice",
    "a retry loop without backoff",
    "a stale feature flag left on in staging",
    "an N+1 query in the serializer",
    "a connection pool that was too small for the worker count",
    "a regex that backtracks on long inputs",
    "an unhandled empty response from the upstream API",
]
_ASSISTANT_SENTENCES = [
    "I ran the full test suite for {svc}: {n} tests passed, {m} failed and {k} were skipped.",
    "The failures in {file} come from {cause}.",
    "I traced the slowdown in {svc} to {cause}; p95 latency went from {a} ms to {b} ms after the fix.",
    "I opened a pull request that touches {file} and two helper modules, about {n} lines in total.",
    "{person} reviewed the change to {svc} and asked for a clearer error message, which I added.",
    "On staging the migration for {svc} took {m} minutes and rewrote {n} thousand rows.",
    "I added {k} regression tests around {svc} so this cannot come back silently.",
    "The logs for {svc} show {n} warnings an hour, mostly from {cause}.",
    "I compared three options for {svc}; the simplest keeps the current schema and adds a queue.",
    "The dependency upgrade in {file} is done; nothing else in the lockfile changed.",
    "I profiled {svc} with a production-sized dataset of {n} thousand records.",
    "The error rate on {svc} dropped from {a} to {k} per ten thousand requests.",
    "I documented the new behaviour of {svc} in the runbook, with the rollback steps.",
    "{person} confirmed that the numbers from {svc} match last month's report.",
    "The flaky check in {file} was caused by {cause}, so I fixed the cause rather than retrying.",
    "I left a note for {person} about the remaining edge cases in {svc}.",
    "Memory use of the worker for {svc} is stable at about {b} MB after {m} hours.",
    "I rolled the change to {svc} out to {k} percent of traffic and watched the dashboards.",
    "Nothing in {file} depends on the old behaviour any more, so the flag can be removed.",
    "The benchmark for {svc} now finishes in {m} seconds instead of {a}.",
]
_ASSISTANT_OPENERS = [
    "Done.",
    "Here is where things stand.",
    "Quick update.",
    "I looked into it.",
    "Finished the first pass.",
    "Status report.",
    "Progress on that.",
]
_ASSISTANT_CLOSERS = [
    "Shall I carry on with {svc} next?",
    "Let me know if you want the details of {file}.",
    "Next I will look at {svc} unless you prefer otherwise.",
    "I will keep an eye on it over the next day.",
    "",
]
_PERSON_REQUESTS = [
    "Thanks. Can you look at {svc} next?",
    "What did {person} say about {svc}?",
    "Good, go ahead with the fix in {file}.",
    "Why is {svc} slow again this morning?",
    "Please write up what changed in {svc} for the team.",
    "Can you check whether {file} still needs the workaround?",
    "Nice work. How long until {svc} is done?",
    "Let's park {svc} for now and pick it up tomorrow.",
    "Could you double-check the numbers for {svc}?",
    "Is {person} happy with the change to {file}?",
]
_PERSON_LEAD_INS = [
    "One rule from now on.",
    "Before you carry on, something important.",
    "Please remember this for the rest of the project.",
    "A constraint from the client.",
    "Management just confirmed this.",
    "Keep this in mind.",
    "Quick but important.",
    "For everything that follows.",
]


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        svc=rng.choice(SERVICES),
        file=rng.choice(FILES),
        person=rng.choice(PEOPLE),
        cause=rng.choice(_CAUSES),
        n=rng.randint(12, 980),
        m=rng.randint(2, 59),
        k=rng.randint(1, 30),
        a=rng.randint(120, 900),
        b=rng.randint(40, 400),
    )


def _assistant_turn(rng: random.Random) -> str:
    # Reports of work: several sentences, of varied length, like an agent's real replies.
    body = [_fill(s, rng) for s in rng.sample(_ASSISTANT_SENTENCES, rng.randint(3, 7))]
    closer = _fill(rng.choice(_ASSISTANT_CLOSERS), rng)
    return " ".join([rng.choice(_ASSISTANT_OPENERS), *body, closer]).strip()


def _person_turn(rng: random.Random) -> str:
    return _fill(rng.choice(_PERSON_REQUESTS), rng)


def _constraint_turn(constraint: str, rng: random.Random) -> str:
    return f"{rng.choice(_PERSON_LEAD_INS)} {constraint} {_person_turn(rng)}"


def plant_positions(turns: int, count: int) -> list[int]:
    """Even turn numbers (the person's) spread evenly through the conversation, one per constraint."""
    if count == 0:
        return []
    step = turns / count
    return [2 * int((k * step + step / 4) // 2) for k in range(count)]


def conversation(turns: int, *, seed: int = 3, constraints: Sequence[str] = ()) -> list[tuple[str, str]]:
    """`turns` (role, text) pairs alternating person/assistant, with `constraints` planted in order.

    Deterministic for a given seed; the constraints sit in person turns at `plant_positions`.
    """
    rng = random.Random(seed)
    planted = dict(zip(plant_positions(turns, len(constraints)), constraints, strict=True))
    out: list[tuple[str, str]] = []
    for n in range(turns):
        if n % 2:
            out.append(("assistant", _assistant_turn(rng)))
        elif n in planted:
            out.append(("user", _constraint_turn(planted[n], rng)))
        else:
            out.append(("user", _person_turn(rng)))
    return out


def chatter(count: int, *, seed: int) -> list[tuple[str, str]]:
    """`count` turns of the conversation with every text distinct, so each is its own chunk."""
    seen: set[str] = set()
    turns: list[tuple[str, str]] = []
    for n, (role, text) in enumerate(conversation(count, seed=seed)):
        # Short person turns repeat; a ticket number keeps every chunk its own.
        if text in seen:
            text = f"{text} (ticket {n})"
        seen.add(text)
        turns.append((role, text))
    return turns


_QUESTIONS = [
    "Why was {svc} slow?",
    "What did {person} say about {svc}?",
    "Which file had the flaky check?",
    "How many tests failed for {svc}?",
    "What caused the errors in {file}?",
    "Did we roll out the change to {svc}?",
    "What is the memory use of the {svc} worker?",
    "When did the migration for {svc} run?",
]


def questions(count: int, *, seed: int) -> list[str]:
    """`count` distinct questions a person might ask of such a conversation."""
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < count:
        q = rng.choice(_QUESTIONS).format(
            svc=rng.choice(SERVICES), person=rng.choice(PEOPLE), file=rng.choice(FILES)
        )
        out.append(q if q not in out else f"{q} ({len(out)})")
    return out
