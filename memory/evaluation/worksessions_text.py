"""Tool outputs for the agent work sessions: source files, test logs, stack traces, grep, git, CI.

Each function takes the session's random generator and its context (`Ctx`: domain, project, the
libraries' pinned versions, …) and returns the text a tool would print, usually several hundred
characters. Standard library only.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field


@dataclass
class Ctx:
    domain: dict
    project: str
    person: str
    mates: list[str]
    versions: dict[str, str] = field(default_factory=dict)
    branch: str = "main"


def snake(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def camel(words: str) -> str:
    parts = re.sub(r"[^A-Za-z0-9]+", " ", words).split()
    return parts[0].lower() + "".join(p.title() for p in parts[1:]) if parts else "x"


def libs(ctx: Ctx) -> list[str]:
    return [c[2] for c in ctx.domain["choices"]] + [c[3] for c in ctx.domain["choices"]]


def pkg(name: str) -> str:
    """A library as a package name ("the stdlib logging module" → logging, "pydantic v2" → pydantic)."""
    words = [
        w
        for w in re.split(r"[\s/]+", name)
        if w.lower()
        not in ("the", "stdlib", "module", "with", "a", "small", "wrapper", "hand-written", "plain")
    ]
    return re.sub(r"[^a-z0-9_.-]", "", (words[0] if words else name).lower()) or "lib"


def code(rng: random.Random, ctx: Ctx, path: str) -> str:
    comp = rng.choice(ctx.domain["components"])[0]
    lang = ctx.domain["lang"]
    lib = pkg(rng.choice(libs(ctx)))
    n, m = rng.randint(2, 50), rng.randint(100, 5000)
    if lang == "python":
        fn = snake(comp)
        body = [
            f"# {path}",
            "from __future__ import annotations",
            "",
            f"import {lib.replace('-', '_')}",
            f"from {ctx.project.replace('-', '_')}.settings import settings",
            "",
            f"MAX_ITEMS = {m}",
            "",
            "",
            f"def {fn}(items: list[dict], *, limit: int = {n}) -> list[dict]:",
            f'    """The {comp} step: keep at most `limit` items per key."""',
            "    seen: dict[str, int] = {}",
            "    out = []",
            "    for item in items[:MAX_ITEMS]:",
            '        key = item.get("id") or item.get("ref")',
            "        if seen.get(key, 0) >= limit:",
            "            continue",
            "        seen[key] = seen.get(key, 0) + 1",
            "        out.append(item)",
            f'    if settings.DEBUG:\n        print("{fn}:", len(out), "of", len(items))',
            "    return out",
        ]
    elif lang == "typescript":
        fn = camel(comp)
        body = [
            f"// {path}",
            f"import {{ {camel(lib)} }} from '{lib}';",
            "import { config } from '../config';",
            "",
            f"const MAX_ITEMS = {m};",
            "",
            f"export function {fn}(items: Item[], limit = {n}): Item[] {{",
            "  const seen = new Map<string, number>();",
            "  return items.slice(0, MAX_ITEMS).filter((item) => {",
            "    const key = item.id ?? item.ref;",
            "    const count = seen.get(key) ?? 0;",
            "    if (count >= limit) return false;",
            "    seen.set(key, count + 1);",
            "    return true;",
            "  });",
            "}",
            "",
            f"export default {{ {fn}, retries: config.retries ?? {rng.randint(1, 6)} }};",
        ]
    elif lang == "go":
        fn = camel(comp)[0].upper() + camel(comp)[1:]
        body = [
            f"// {path}",
            f"package {path.split('/')[-2] if '/' in path else 'main'}",
            "",
            'import (\n\t"context"\n\t"fmt"\n)',
            "",
            f"const maxItems = {m}",
            "",
            f"// {fn} runs the {comp} over items, at most {n} per key.",
            f"func {fn}(ctx context.Context, items []Item) ([]Item, error) {{",
            "\tseen := map[string]int{}",
            "\tout := make([]Item, 0, len(items))",
            "\tfor i, it := range items {",
            "\t\tif i >= maxItems {\n\t\t\tbreak\n\t\t}",
            f"\t\tif seen[it.ID] >= {n} {{\n\t\t\tcontinue\n\t\t}}",
            "\t\tseen[it.ID]++",
            "\t\tout = append(out, it)",
            "\t}",
            f'\treturn out, fmt.Errorf("{snake(comp)}: %w", ctx.Err())',
            "}",
        ]
    else:
        name = snake(comp)
        body = [
            f"# {path}",
            f'resource "aws_security_group" "{name}" {{',
            f'  name        = "{ctx.project}-{name}"',
            f'  description = "{comp} ({ctx.project})"',
            "  vpc_id      = var.vpc_id",
            "",
            "  ingress {",
            f"    from_port   = {rng.choice([443, 8443, 5432, 6379, 9090])}",
            f"    to_port     = {rng.choice([443, 8443, 5432, 6379, 9090])}",
            '    protocol    = "tcp"',
            "    cidr_blocks = var.private_cidrs",
            "  }",
            "",
            f'  tags = merge(local.tags, {{ Component = "{name}", MaxNodes = "{n}" }})',
            "}",
        ]
    return "\n".join(body)


def _test_names(rng: random.Random, ctx: Ctx, k: int) -> list[str]:
    words = [
        "handles_empty_input",
        "keeps_order",
        "rejects_bad_token",
        "retries_on_timeout",
        "paginates",
        "respects_limit",
        "parses_dates",
        "round_trips",
        "skips_duplicates",
        "reports_errors",
    ]
    comps = [snake(c[0]) for c in ctx.domain["components"]]
    return [f"test_{rng.choice(comps)}_{rng.choice(words)}" for _ in range(k)]


def test_log(rng: random.Random, ctx: Ctx, test_file: str, *, failing: str = "") -> str:
    lang = ctx.domain["lang"]
    names = _test_names(rng, ctx, rng.randint(5, 10))
    passed, secs = rng.randint(12, 180), round(rng.uniform(0.4, 40.0), 2)
    if lang == "python" or lang == "hcl":
        lines = [f"$ pytest {test_file} -q", f"collected {passed + (1 if failing else 0)} items", ""]
        lines += [f"{test_file}::{n} PASSED" for n in names]
        if failing:
            lines += [
                f"{test_file}::{names[0]} FAILED",
                "",
                "=" * 20 + " FAILURES " + "=" * 20,
                failing,
                f"== 1 failed, {passed} passed in {secs}s ==",
            ]
        else:
            lines.append(f"== {passed} passed, {rng.randint(0, 3)} skipped in {secs}s ==")
    elif lang == "typescript":
        lines = [f"$ npx vitest run {test_file}", ""]
        lines += [f" ✓ {test_file} > {n.replace('_', ' ')} {rng.randint(1, 90)}ms" for n in names]
        if failing:
            lines += [
                f" ✗ {test_file} > {names[0].replace('_', ' ')}",
                "",
                failing,
                f" Test Files  1 failed | {rng.randint(2, 9)} passed",
                f"      Tests  1 failed | {passed} passed",
            ]
        else:
            lines += [
                "",
                f" Test Files  {rng.randint(2, 9)} passed",
                f"      Tests  {passed} passed",
                f"   Duration  {secs}s",
            ]
    else:
        mod = f"github.com/acme/{ctx.project}/{test_file.rsplit('/', 1)[0]}"
        lines = [f"$ go test ./{test_file.rsplit('/', 1)[0]}/... -run . -v"]
        lines += [f"=== RUN   {camel(n)}\n--- PASS: {camel(n)} (0.{rng.randint(0, 99):02d}s)" for n in names]
        if failing:
            lines += [f"--- FAIL: {camel(names[0])}", failing, "FAIL", f"FAIL\t{mod}\t{secs}s"]
        else:
            lines += ["PASS", f"ok  \t{mod}\t{secs}s"]
    return "\n".join(lines)


def assertion(rng: random.Random, ctx: Ctx, test_file: str) -> str:
    a = rng.choice([200, 201, 204, 3, 10, 42, 7])
    return f"{test_file}:{rng.randint(20, 300)}: AssertionError: expected {a + rng.randint(1, 3)}, got {a}"


def traceback(rng: random.Random, ctx: Ctx, exc: str, message: str, path: str) -> str:
    lang = ctx.domain["lang"]
    other = rng.sample(ctx.domain["files"], 3)
    if lang in ("python", "hcl") and not exc.startswith("Error") and exc not in ("CrashLoopBackOff",):
        frames = [
            f'  File "{f}", line {rng.randint(10, 400)}, in {snake(rng.choice(ctx.domain["components"])[0])}\n'
            f"    result = step(batch, limit=limit)"
            for f in (*other[:2], path)
        ]
        return "Traceback (most recent call last):\n" + "\n".join(frames) + f"\n{exc}: {message}"
    if lang == "typescript":
        frames = [
            f"    at {camel(rng.choice(ctx.domain['components'])[0])} ({f}:{rng.randint(5, 300)}:{rng.randint(2, 40)})"
            for f in (path, *other[:2])
        ]
        return (
            f"{exc}: {message}\n"
            + "\n".join(frames)
            + "\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)"
        )
    if lang == "go":
        return f"{exc}: {message}\n\ngoroutine {rng.randint(1, 90)} [running]:\n" + "\n".join(
            f"github.com/acme/{ctx.project}/{f.rsplit('.', 1)[0]}(...)\n\t/src/{f}:{rng.randint(10, 300)} +0x{rng.randint(16, 999):x}"
            for f in (path, *other[:2])
        )
    return (
        f"│ {exc}: {message}\n│\n│   with module.{snake(path.split('/')[1] if '/' in path else path)},\n"
        f'│   on {path} line {rng.randint(3, 120)}:\n│ {rng.randint(3, 120)}: resource "aws_eks_node_group" "workers" {{\n╵'
    )


def grep(rng: random.Random, ctx: Ctx, term: str) -> str:
    lines = [f"$ rg -n '{term}'"]
    for f in rng.sample(ctx.domain["files"], min(len(ctx.domain["files"]), rng.randint(4, 7))):
        comment, empty = {
            "python": ("# ", "None"),
            "typescript": ("// ", "undefined"),
            "go": ("// ", "nil"),
        }.get(ctx.domain["lang"], ("# ", "null"))
        lines.append(
            f"{f}:{rng.randint(3, 400)}:    {rng.choice([comment, ''])}{term} = {rng.choice([empty, '0', 'cfg.' + snake(term)])}"
        )
    return "\n".join(lines)


def git(rng: random.Random, ctx: Ctx) -> str:
    kind = rng.choice(["status", "log", "diff"])
    files = rng.sample(ctx.domain["files"], 4)
    if kind == "status":
        return (
            f"$ git status\nOn branch {ctx.branch}\nChanges not staged for commit:\n"
            + "\n".join(f"\tmodified:   {f}" for f in files[:3])
            + f"\n\nUntracked files:\n\t{files[3]}.orig"
        )
    if kind == "log":
        tasks = ctx.domain["tasks"]
        return "$ git log --oneline -6\n" + "\n".join(
            f"{rng.getrandbits(28):07x} {rng.choice(tasks)[0].upper()}{rng.choice(tasks)[1:]}"
            for _ in range(6)
        )
    return (
        "$ git diff --stat\n"
        + "\n".join(
            f" {f} | {rng.randint(1, 80)} {'+' * rng.randint(1, 12)}{'-' * rng.randint(0, 8)}" for f in files
        )
        + f"\n {len(files)} files changed, {rng.randint(10, 200)} insertions(+), {rng.randint(1, 90)} deletions(-)"
    )


def install(rng: random.Random, ctx: Ctx) -> str:
    chosen = rng.sample(sorted(ctx.versions), min(len(ctx.versions), rng.randint(4, 8)))
    lang = ctx.domain["lang"]
    if lang == "typescript":
        return (
            "$ npm ls --depth=0\n"
            + f"{ctx.project}@0.{rng.randint(1, 30)}.0\n"
            + "\n".join(f"├── {name}@{ctx.versions[name]}" for name in chosen)
        )
    if lang == "go":
        return "$ go list -m all | head\n" + "\n".join(
            f"github.com/{name}/{name} v{ctx.versions[name]}" for name in chosen
        )
    return "$ pip freeze\n" + "\n".join(f"{name}=={ctx.versions[name]}" for name in chosen)


def ci(rng: random.Random, ctx: Ctx) -> str:
    jobs = ["lint", "typecheck", "unit tests", "integration tests", "build image", "security scan"]
    return (
        f"CI run #{rng.randint(1000, 9999)} on {ctx.branch}: "
        + ", ".join(f"{j} passed ({rng.randint(8, 400)} s)" for j in rng.sample(jobs, rng.randint(3, 6)))
        + "."
    )


def deploy_ok(rng: random.Random, ctx: Ctx, env: str) -> str:
    return (
        f"$ ./scripts/deploy.sh {env}\nbuilding {ctx.project}:{rng.getrandbits(28):07x} ...\n"
        f"pushing image ... done\nrolling out {rng.randint(2, 9)} replicas in {env}\n"
        f"waiting for rollout: {rng.randint(1, 9)} of {rng.randint(9, 12)} updated\n"
        f'deployment "{ctx.project}" successfully rolled out in {rng.randint(20, 300)} s'
    )
