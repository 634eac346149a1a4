"""The vocabulary of the team channel set (team_channel.py): the six kinds of team, the people, the
documents they ask the shared agent to edit, each session's cast (`Team`), the turn constructors and
the tools' outputs (CI runs, tickets, SQL queries, calendars, deploys, doc search, the on-call rota)
that routine turns and planted facts share.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


def _bar(text: str) -> list[str]:
    return [piece.strip() for piece in text.split("|") if piece.strip()]


NAMES = _bar(
    "Priya|Lena|Omar|Kasia|Tomas|Aiko|Bram|Chidi|Dalia|Emil|Farah|Gus|Hana|Ines|Jonas|Keira|Luca|Maren|"
    "Nadia|Oskar|Pilar|Quinn|Rafa|Saskia|Teo|Uma|Viktor|Wren|Yusuf|Zoe|Anders|Bea|Cyrus|Dev|Elif|Femi|"
    "Greta|Hugo|Ivo|Jana|Kofi|Leila|Mateo|Noor|Olga|Pavel|Rhea|Soren|Tariq|Vera|Ada|Mina|Rohan|Sofia"
)
# The six kinds of team, in turn: session n is KINDS[(n - 1) % 6].
KINDS: list[dict] = [
    {
        "kind": "platform",
        "prefix": "PLAT",
        "projects": _bar("Ironbark|Keelson|Halyard"),
        "components": _bar(
            "ingress gateway|log shipper|secrets vault|build cache|cert manager|node autoscaler|"
            "metrics exporter|DNS resolver"
        ),
        "jobs": _bar("terraform-plan|helm-lint|image-scan|e2e-smoke|unit"),
        "metric": "p95 request latency",
        "meeting": "capacity review",
    },
    {
        "kind": "mobile",
        "prefix": "MOB",
        "projects": _bar("Pocketful|Tidewater|Lumo"),
        "components": _bar(
            "login screen|push notifications|offline sync|image cache|onboarding carousel|settings page|"
            "crash reporter|deep links"
        ),
        "jobs": _bar("ios-build|android-build|ui-tests|lint|unit"),
        "metric": "crash-free sessions",
        "meeting": "app review",
    },
    {
        "kind": "data",
        "prefix": "DATA",
        "projects": _bar("Quarry|Ledgerline|Northstar"),
        "components": _bar(
            "nightly ETL|events table|revenue dashboard|dbt models|warehouse loader|churn model|"
            "attribution report|ingest API"
        ),
        "jobs": _bar("dbt-test|sqlfluff|airflow-dag-check|great-expectations|unit"),
        "metric": "rows loaded per hour",
        "meeting": "metrics review",
    },
    {
        "kind": "payments",
        "prefix": "PAY",
        "projects": _bar("Tillpoint|Coinhouse|Remit"),
        "components": _bar(
            "checkout service|refund worker|ledger|invoice renderer|fraud rules|webhook relay|card vault|"
            "payout scheduler"
        ),
        "jobs": _bar("contract-tests|unit|integration|pci-scan|lint"),
        "metric": "payment success rate",
        "meeting": "risk review",
    },
    {
        "kind": "growth web",
        "prefix": "WEB",
        "projects": _bar("Brightside|Signal Hill|Upstream"),
        "components": _bar(
            "landing page|pricing page|signup form|experiment service|email templates|blog CMS|"
            "referral widget|sitemap generator"
        ),
        "jobs": _bar("lighthouse|playwright|unit|lint|visual-diff"),
        "metric": "signup conversion",
        "meeting": "growth sync",
    },
    {
        "kind": "support tooling",
        "prefix": "SUP",
        "projects": _bar("Helpdeck|Switchboard|Beacon"),
        "components": _bar(
            "ticket router|macro editor|SLA tracker|chat widget|knowledge base|CSAT survey|escalation bot|"
            "agent dashboard"
        ),
        "jobs": _bar("unit|integration|lint|a11y|e2e"),
        "metric": "first response time",
        "meeting": "queue review",
    },
]
# What people ask the agent to edit; a session's facts use its first few, its routine turns the rest.
ARTIFACTS = _bar(
    "release notes|status page draft|onboarding doc|sprint summary|incident write-up|changelog|"
    "roadmap deck|customer announcement|weekly update|on-call handbook|retro notes|migration guide"
)
VENDORS = _bar(
    "Cloudmere|Datafrost|Pagewise|Stackhaus|Vantly|Northgate Hosting|Kitestring|Ostara Labs|Mosaic IQ|Brindle"
)
RESTAURANTS = _bar("Nando's|the ramen place|Dishoom|the taco truck|Franco's|the Greek deli|Honest Burgers")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
ERRORS = _bar(
    "connection reset by peer|timeout after 30s waiting for port 5432|snapshot mismatch in 3 tests|"
    "OOMKilled (exit 137)|certificate has expired|rate limit exceeded (429)|lockfile out of date|"
    "flaky: retried 3 times|assertion failed: expected 200, got 503|no space left on device"
)

SMALL_TALK = _bar(
    "Morning all|coffee's on in the kitchen|anyone else's VPN dropping?|brb, fire drill|"
    "lunch anyone? thinking {food}|happy Friday!|that meeting could have been an email|"
    "my cat just walked across the keyboard, ignore that|heads down for an hour, ping if urgent|"
    "back from the dentist|who took the good HDMI cable|the build is slow today, or is it me?|"
    "great demo yesterday btw|going for a walk, back in 20|did anyone watch the match last night?|"
    "thanks all, logging off|train's delayed, in at 10|nice work on the release|"
    "reminder: fill in the team survey|welcome back {other}!"
)
REPLIES = _bar(
    "ha, same|+1|good call|nice|thanks!|on it|will do|sounds good|lol|yep|noted|agreed|👍|makes sense"
)
BOT_ACKS = _bar("Done.|On it.|Done — updated.|All set.|Sure, done.|Updated.|Done, have a look.|Changed it.")

# The changes people ask the agent to make to a document (a fact's; routine turns ask for others),
# and how they ask.
CHANGES = [
    "move the known-issues section to the top",
    "drop the mention of the beta flag",
    "say 'workspace' instead of 'project' throughout",
    "add the ticket numbers next to each fix",
    "cut the intro down to two sentences",
    "put the rollback steps before the deploy steps",
    "link the status dashboard in the first paragraph",
    "remove the internal hostnames",
    "add a line thanking the support team",
    "switch every date to ISO format",
    "spell out the maintenance window in UTC",
    "put the deadline in bold",
    "add a TL;DR at the very top",
    "list an owner next to each item",
    "move the FAQ into an appendix",
    "tone down the apology in the second paragraph",
    "mention the price change only once",
    "replace the old screenshot with the dark-mode one",
]
ASKS = [
    "@assistant in the {art}, can you {ch}?",
    "@assistant one more for the {art}: {ch}, please.",
    "assistant, please {ch} in the {art}.",
    "@assistant could you {ch} in the {art}? thanks",
    "for the {art} — @assistant {ch}",
]


@dataclass
class Team:
    """One session's cast: the team's people, its kind, project, components and the names it uses."""

    number: int
    kind: dict
    people: list[str]
    project: str
    components: list[str]
    artifacts: list[str]
    vendors: list[str]
    domain: str


def team(rng: random.Random, number: int) -> Team:
    kind = KINDS[(number - 1) % len(KINDS)]
    # 3–6 people, drawn so that sessions differ in who is on the team.
    people = rng.sample(NAMES, 3 + number % 4)
    project = kind["projects"][((number - 1) // len(KINDS)) % len(kind["projects"])]
    return Team(
        number=number,
        kind=kind,
        people=people,
        project=project,
        components=rng.sample(kind["components"], len(kind["components"])),
        artifacts=rng.sample(ARTIFACTS, len(ARTIFACTS)),
        vendors=rng.sample(VENDORS, 4),
        domain=f"{project.lower().replace(' ', '')}.io",
    )


def say(name: str, text: str) -> dict:
    return {"role": "user", "name": name, "text": text}


def bot(text: str) -> dict:
    return {"role": "assistant", "name": "assistant", "text": text}


def tool(name: str, text: str) -> dict:
    return {"role": "tool", "name": name, "text": text}


def clock(rng: random.Random, start: int = 9, end: int = 17) -> str:
    return f"{rng.randint(start, end):02d}:{rng.choice((0, 15, 30, 45)):02d}"


def sha(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))


def ticket(rng: random.Random, t: Team) -> str:
    return f"{t.kind['prefix']}-{rng.randint(100, 2999)}"


def _fit(head: str, rows: list[str], tail: str = "") -> str:
    """A tool's output: the head, as many rows as fit in 1,100 characters, and the tail."""
    text = head
    for row in rows:
        if len(text) + len(row) + len(tail) + 2 > 1100:
            break
        text += "\n" + row
    return text + ("\n" + tail if tail else "")


def ci(rng: random.Random, t: Team, branch: str, failing: str = "") -> str:
    """A CI run: each job with its time; `failing` names the error of the one job that fails."""
    jobs = rng.sample(t.kind["jobs"], 4)
    rows = []
    for k, job in enumerate(jobs):
        took = f"{rng.randint(0, 9)}:{rng.randint(0, 59):02d}"
        if failing and k == len(jobs) - 1:
            rows.append(f"  ✗ {job:<20} {took}  FAILED")
            rows.append(f"      {rng.choice(t.components)}: {failing}")
            rows.append(
                f"      see https://ci.{t.domain}/runs/{rng.randint(10000, 99999)}/log#L{rng.randint(40, 900)}"
            )
        else:
            rows.append(f"  ✓ {job:<20} {took}  ({rng.randint(40, 900)} checks)")
    status = "failed" if failing else "passed"
    head = f"pipeline #{rng.randint(4000, 9999)} on {branch} @ {sha(rng)} — {status}"
    tail = f"triggered by push · {rng.randint(3, 19)} min total · cache hit {rng.randint(40, 99)}%"
    return _fit(head, rows, tail)


def tickets(rng: random.Random, t: Team, component: str, extra: list[str] | None = None) -> str:
    verbs = _bar(
        "flaky retry on timeout|wrong copy in the empty state|slow under load|logs leak an email address|"
        "missing metric labels|crash on rotate|stale cache after deploy|docs out of date|"
        "null pointer on empty input|alert fires twice"
    )
    rows = [
        f"{ticket(rng, t)}  [{rng.choice(['open', 'open', 'in progress', 'review'])}]  {component}: {v}"
        f"  (assignee: {rng.choice([*t.people, 'unassigned'])}, updated {rng.randint(1, 9)}d ago)"
        for v in rng.sample(verbs, rng.randint(3, 6))
    ]
    return _fit(
        f"tickets.search(project={t.kind['prefix']}, component={component!r}, status!=done)",
        rows + (extra or []),
    )


def sql(rng: random.Random, t: Team, what: str) -> str:
    rows = [
        f" {d:<10} | {rng.randint(120, 9000):>7} | {rng.randint(1, 99):>3}.{rng.randint(0, 9)}%"
        for d in rng.sample(
            ["2 days ago", "yesterday", "last Mon", "last Tue", "last Wed", "last Thu", "last Fri"], 5
        )
    ]
    head = (
        f"sql> SELECT day, count(*) AS n, share FROM {t.project.lower().replace(' ', '_')}.{what.replace(' ', '_')}"
        f" WHERE day >= now() - interval '7 days' GROUP BY day ORDER BY day;\n day        |       n | share\n"
        "------------+---------+------"
    )
    return _fit(head, rows, f"({len(rows)} rows, {rng.randint(40, 2400)} ms)")


def calendar(rng: random.Random, t: Team, day: str, who: list[str]) -> str:
    busy = _bar("standup|1:1|interview|planning|focus time|lunch|customer call|design review|dentist")
    rows = []
    for name in who:
        slots = sorted(rng.sample(range(9, 18), 3))
        rows.append(
            f"{name:<8} " + "; ".join(f"{h:02d}:{rng.choice(['00', '30'])} {rng.choice(busy)}" for h in slots)
        )
    free = sorted(rng.sample(range(10, 17), 2))
    return _fit(
        f"calendar.freebusy({day}, attendees={len(who)})",
        rows,
        "common free slots: " + ", ".join(f"{h:02d}:00–{h:02d}:30" for h in free),
    )


def deploy(rng: random.Random, t: Team, target: str, version: str) -> str:
    component = rng.choice(t.components)
    rows = [
        f"[{k:02d}] {step}"
        for k, step in enumerate(
            [
                f"resolving {t.project} {version} ({sha(rng)})",
                f"pulling image registry.{t.domain}/{component.replace(' ', '-')}:{version}",
                f"applying {rng.randint(3, 14)} manifests to {target}",
                f"waiting for rollout: {rng.randint(2, 9)}/{rng.randint(9, 12)} pods ready",
                "health checks passing",
                f"smoke test: {rng.randint(12, 60)} requests, 0 errors",
            ]
        )
    ]
    return _fit(
        f"deploy {t.project} {version} -> {target}",
        rows,
        f"done in {rng.randint(2, 14)}m{rng.randint(0, 59)}s",
    )


def docs(rng: random.Random, t: Team, query: str) -> str:
    rows = [
        f"{k}. {title} — https://wiki.{t.domain}/{title.lower().replace(' ', '-')[:28]}\n   "
        f"…{rng.choice(t.components)} {rng.choice(['is configured in', 'is owned by the team, see', 'was moved to', 'pages via'])} "
        f"{rng.choice(['the shared config repo', 'the team space', 'the platform handbook', 'the old wiki'])}…"
        for k, title in enumerate(
            rng.sample(
                [f"{c.capitalize()} runbook" for c in t.components[:6]]
                + ["Release checklist", "Access requests", "Team norms", "Incident process"],
                4,
            ),
            start=1,
        )
    ]
    return _fit(f"docs.search({query!r}): 4 results", rows)


def rota(rng: random.Random, t: Team) -> str:
    pairs = [rng.sample(t.people, 2) for _ in WEEKDAYS]
    rows = [f"{day:<9} primary {a:<8} secondary {b}" for day, (a, b) in zip(WEEKDAYS, pairs, strict=True)]
    return _fit("oncall.schedule(this week)", rows, "swaps: none recorded")
