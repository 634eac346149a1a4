"""`manage.py bench [--quick] [--sizes 1000,5000,10000,50000] [--json OUT] [--profile] [--keep-data]`.

Prints throughput, latency and memory figures and asserts nothing (docs/evaluation.md: benchmarks
print numbers, tests assert behaviour). One labelled line per figure:

- `append engine` / `append service` / `append api` / `append http` / `append http keep-alive`: one
  item per call through the engine alone (`TieredQueue` over `InMemoryStore`), `services.append_items`
  on SQLite, the API in-process (Django's test client: routing, auth, ninja, no socket), and the real
  production web server (uvicorn serving ottoweb/asgi.py) with a Celery worker beside it, as `make run`
  starts them (a fresh connection per request, as curl does, with the worker idle: it starts after
  them; then one reused connection, as an HTTP client library does, while the worker embeds the turns
  before) — p50/p95/max per append and appends/s;
- (the in-process sections' sessions are deleted before the worker starts: it starts with no backlog)
- `worker embedding`: how long after the last HTTP append the worker had written a vector for every
  turn of the web server's session; `worker embedding sessions` the same per extra session;
- `compaction engine` / `compaction service`: one generation over a full Y (the default budget);
  `compaction 100 turns`: the offline summariser over 100 new turns and the bullets before them;
- `query embedding`: the model alone on one question;
- `recall N chunks`: `memory.recall.recall` in-process on an N-chunk session, query embedding
  included, each recall beside its question embedded alone (the ratio of the two p50s is what a
  recall costs on top of the embedding it waits for); `recall http` the same over HTTP on the web server's session once the worker has
  embedded it, so the first recall only loads the query embedder;
- `embedding`: documents embedded per second while building the sessions;
- `rss web`: the web process's resident set after serving recalls; it embeds queries only, documents
  are the worker's (`/proc/<pid>/status`); `rss worker`: the worker's after embedding every session;
  `rss bench peak`: this process's peak (`getrusage`);
- `load average` before and after, because a busy machine inflates every latency.

It never touches the configured database: the command re-executes itself in a child process whose
OTTO_DATA_DIR is a fresh temporary folder (deleted afterwards unless --keep-data). The child
migrates that folder and the web server and worker it starts use it too. They run in job mode
whatever OTTO_COMPACTION says (the production shape: appends hand embedding and compaction to the
worker); the in-process appends are measured in the configured mode. Big sessions for the
in-process recalls are built through `services.append_items` in batches at the default budgets,
compacting inline (no worker is involved), so they carry real compaction generations.

The sections are mixins under memory/evaluation/: `bench_local.py` (in-process), `bench_server.py`
(a real web server and worker), `bench_memory.py` (`--memory`: both processes' memory under the
largest requests), `bench_private.py` (the parent's private data folder), and
`bench_common.py` (scale, latency summaries, the printed line).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from accounts.services import issue_token
from memory.evaluation.bench_common import Scale
from memory.evaluation.bench_local import LocalSections
from memory.evaluation.bench_memory import MemorySections
from memory.evaluation.bench_private import CHILD_FLAG, PrivateRun
from memory.evaluation.bench_server import ServerSections
from memory.services import embedding

DEFAULT_SIZES = "1000,5000,10000,50000"
# Embedding dominates a quick run (about a hundredth of a second a turn on two cores).
QUICK_SIZES = "300"


def _exit_once(*_: object) -> None:
    # A second SIGTERM (pkill reaches the parent and the child alike, and the parent passes one on)
    # must not interrupt the finally blocks the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


class Command(PrivateRun, LocalSections, ServerSections, MemorySections, BaseCommand):
    help = "Print append, compaction, recall and memory figures (on a private temporary database)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--quick", action="store_true", help="a fast smoke run: small counts, one small session"
        )
        parser.add_argument(
            "--sizes",
            default=None,
            help=f"recall session sizes in chunks, comma-separated (default {DEFAULT_SIZES}; --quick {QUICK_SIZES})",
        )
        parser.add_argument("--json", dest="json_out", default=None, help="also write the figures here")
        parser.add_argument(
            "--profile", action="store_true", help="cProfile the recalls at the largest size, print the top"
        )
        parser.add_argument("--keep-data", action="store_true", help="keep the temporary data folder")
        parser.add_argument(
            "--contention",
            type=float,
            default=0.0,
            help="only this: for this many seconds one user sends the largest accepted batch and "
            "/runs/fit in a loop while another appends (p50/p95 of the other's appends)",
        )
        parser.add_argument(
            "--memory",
            action="store_true",
            help="only this: the web process's and the worker's resident sets under the largest "
            "/runs/fit, a 30 MB MCP body and large recalls, and after them (--quick: small probes)",
        )
        parser.add_argument(
            "--load",
            type=float,
            default=0.0,
            help="also run 16 clients on 8 sessions for this many seconds against a server and a worker",
        )

    def handle(self, *args, sizes: str | None, **options):
        spec = sizes or (QUICK_SIZES if options["quick"] else DEFAULT_SIZES)
        try:
            parsed = [int(s) for s in spec.split(",") if s.strip()]
        except ValueError:
            raise CommandError(f"--sizes takes comma-separated chunk counts, not {spec!r}") from None
        if not parsed or min(parsed) < 10:
            raise CommandError("every size must be at least 10 chunks")
        # A terminated bench unwinds (its finally blocks stop the server and the worker, remove the
        # data) instead of leaving them running.
        signal.signal(signal.SIGTERM, _exit_once)
        if os.environ.get(CHILD_FLAG) == str(settings.DATA_DIR):
            self.measure(sizes=parsed, **options)
        else:
            self.run_child(sizes=parsed, **options)

    # --- the child: every figure, section by section ---------------------------------------------------

    def measure(
        self,
        *,
        sizes: list[int],
        quick: bool,
        json_out: str | None,
        profile: bool,
        load: float = 0.0,
        contention: float = 0.0,
        memory: bool = False,
        **options: Any,
    ) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        if contention or memory:
            figures: dict[str, Any] = {"load_before": self.load("before")}
            if contention:
                figures["contention"] = self.contention(contention)
            else:
                figures["memory"] = self.memory_ceiling(quick)
            figures["load_after"] = self.load("after")
            if json_out:
                Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")
            return
        scale = Scale(quick)
        user, _ = get_user_model().objects.get_or_create(username="bench")
        figures = {
            "cpus": os.cpu_count(),
            "model": embedding.database_stamp(),
            "budgets": {"x": settings.OTTO_X_BUDGET, "y": settings.OTTO_Y_BUDGET},
            "quick": quick,
        }
        figures["compaction_mode"] = settings.OTTO_COMPACTION
        self.emit(
            f"model {figures['model']}; budgets X={settings.OTTO_X_BUDGET} Y={settings.OTTO_Y_BUDGET}; "
            f"in-process appends compact {settings.OTTO_COMPACTION}, the web server and its worker job "
            "(sessions for in-process recall are built compacting inline)"
        )
        figures["load_before"] = self.load("before")
        figures["append_engine"] = self.append_engine(scale)
        figures["append_service"] = self.append_service(scale, user)
        figures["compaction_engine"], figures["compaction_service"] = self.compaction(scale, user)
        figures["compaction_100"] = self.compaction_hundred(scale)
        # The in-process API appends and the HTTP sections are one user's, with one token.
        http_user, _ = get_user_model().objects.get_or_create(username="bench-http")
        _, token = issue_token(user=http_user, name="bench")
        figures["append_api"] = self.append_api(scale, token)
        figures.update(self.web(scale, http_user, token))
        figures["query_embedding"] = self.query_embedding(scale)
        figures["recall"] = {}
        for size in sizes:
            figures["recall"][str(size)] = self.recall_at(
                size, scale, user, profile=profile and size == max(sizes), rate=size == min(sizes)
            )
        # What a recall costs beside the question's embedding, which it waits for (on one thread):
        # against the embeddings timed between its recalls, and against the figure timed earlier.
        one_thread = figures["query_embedding"]["one_thread"]["p50_ms"]
        ratios, earlier = [], []
        for size, stats in figures["recall"].items():
            stats["per_query_embedding"] = round(stats["p50_ms"] / stats["query_embedding_beside_ms"], 2)
            stats["per_query_embedding_earlier"] = round(stats["p50_ms"] / one_thread, 2)
            ratios.append(f"{stats['per_query_embedding']}× at {int(size):,} chunks")
            earlier.append(f"{stats['per_query_embedding_earlier']}×")
        self.emit(
            "recall p50 / query embedding p50 (one thread, as in the web process, timed between the "
            f"recalls): {', '.join(ratios)} (against the one-thread figure above: {', '.join(earlier)})"
        )
        docs = sum(r["reembedded"] for r in figures["recall"].values())
        seconds = sum(r["reembed_s"] for r in figures["recall"].values())
        figures["embedding_docs_per_s"] = round(docs / seconds, 1) if seconds else 0.0
        self.emit(
            f"embedding: {figures['embedding_docs_per_s']:.1f} documents/s ({docs:,} documents, turn + "
            f"previous turn: the {min(sizes):,}-chunk session re-embedded whole, every core)"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        figures["rss_bench_peak_mb"] = peak
        self.emit(f"rss bench peak: {peak} MB (this process, getrusage ru_maxrss)")
        if load:
            figures["concurrency"] = self.concurrency(load)
        figures["load_after"] = self.load("after")
        if json_out:
            Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")
            self.emit(f"figures written to {json_out}")
