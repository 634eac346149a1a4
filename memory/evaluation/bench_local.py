"""`manage.py bench`'s in-process sections: appends through the engine, the services and the API
(Django's test client), compaction generations, query embedding and recall at session sizes."""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client, override_settings
from threadpoolctl import threadpool_limits

from memory import services, storage
from memory.engine import embeddings
from memory.engine.memstore import InMemoryStore
from memory.engine.queue import TieredQueue
from memory.engine.summarizers import extractive_summarize
from memory.evaluation.bench_common import WARM_UP, Report, Scale, latency, timed
from memory.evaluation.synthetic import chatter, questions
from memory.models import Bullet, TierState
from memory.recall import recall
from memory.services import embedding

# Items per services.append_items call when building a big session (one transaction each).
BUILD_BATCH = 500


class LocalSections(Report):
    """The figures measured in this process, no server or worker involved."""

    def append_engine(self, scale: Scale) -> dict[str, Any]:
        queue = TieredQueue(
            InMemoryStore(),
            x_budget=settings.OTTO_X_BUDGET,
            y_budget=settings.OTTO_Y_BUDGET,
            summarize=extractive_summarize,
        )
        times, compactions = [], 0
        for role, text in chatter(scale.engine_appends, seed=1):
            start = time.perf_counter()
            appended = queue.append(role, text)
            times.append(time.perf_counter() - start)
            # Compaction is its own figure below; here it only keeps the tiers realistic.
            if appended.needs_compaction:
                queue.compact()
                compactions += 1
        stats = latency(times)
        self.line("append engine", stats, "appends", f"InMemoryStore; {compactions} compactions not timed")
        return stats

    def append_service(self, scale: Scale, user: Any) -> dict[str, Any]:
        session = services.create_session(user=user, sid="bench-service")
        times = [
            timed(
                partial(
                    services.append_items, session=session, items=[services.NewItem(role=role, text=text)]
                )
            )
            for role, text in chatter(scale.service_appends, seed=2)
        ]
        stats = latency(times)
        self.line(
            "append service",
            stats,
            "appends",
            f"services.append_items on {connection.vendor}, one item a call",
        )
        return stats

    def append_api(self, scale: Scale, token: str) -> dict[str, Any]:
        """The API in-process: routing, auth, ninja, no socket."""
        # A host production answers for (testserver is not one).
        client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_HOST="127.0.0.1")
        client.post("/api/v1/sessions", {"id": "bench-api"}, content_type="application/json")
        times = []
        for role, text in chatter(scale.service_appends, seed=6):
            start = time.perf_counter()
            response = client.post(
                "/api/v1/sessions/bench-api/items",
                {"role": role, "text": text},
                content_type="application/json",
            )
            times.append(time.perf_counter() - start)
            if response.status_code != 201:
                raise CommandError(f"an in-process API append answered {response.status_code}")
        stats = latency(times)
        self.line("append api", stats, "appends", "in-process test client, no socket")
        return stats

    def compaction(self, scale: Scale, user: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Time each generation alone: fill Y to just under its budget, then force the compaction.

        The engine queue and the service session see the same turns, and the summariser is
        deterministic, so both compact the same Y (raw turns plus the previous generation's bullets).
        """
        queue = TieredQueue(
            InMemoryStore(), x_budget=1, y_budget=scale.y_tokens, summarize=extractive_summarize
        )
        # X of one token: every turn moves straight to Y, as an X overflow would move it.
        session = services.create_session(
            user=user, sid="bench-compaction", x_budget=1, y_budget=scale.y_tokens
        )
        turns = iter(chatter(scale.generations * scale.y_tokens // 20, seed=3))
        engine_times, service_times, raw = [], [], []
        for _ in range(scale.generations):
            batch: list[services.NewItem] = []
            while True:
                role, text = next(turns)
                draft = queue.draft(role, text)
                if queue.store.totals("history").y + draft.tokens > scale.y_tokens:
                    break
                queue.append(role, text)
                batch.append(services.NewItem(role=role, text=text))
            for first in range(0, len(batch), BUILD_BATCH):
                services.append_items(session=session, items=batch[first : first + BUILD_BATCH])
            raw.append(len(batch))
            engine_times.append(timed(lambda: queue.compact(force=True)))
            service_times.append(timed(lambda: services.compact_session(session=session, force=True)))
        extra = f"Y of {scale.y_tokens:,} tokens: {sum(raw) // len(raw):,} raw turns + the previous bullets"
        engine, service = latency(engine_times), latency(service_times)
        for label, stats in (("compaction engine", engine), ("compaction service", service)):
            self.emit(
                f"{label}: p50 {stats['p50_ms']:.0f} ms, max {stats['max_ms']:.0f} ms per generation "
                f"({stats['n']} generations, {extra})"
            )
        return engine, service

    def compaction_hundred(self, scale: Scale) -> dict[str, Any]:
        """One compaction of 100 turns with who and when (the summariser over 100 raw turns and the
        bullets before them, re-abstracted), generation after generation, the engine alone."""
        queue = TieredQueue(
            InMemoryStore(), x_budget=1, y_budget=settings.OTTO_Y_BUDGET, summarize=extractive_summarize
        )
        turns = chatter(100 * (scale.generations * 5 + WARM_UP), seed=4)
        start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
        times = []
        for n, (role, text) in enumerate(turns):
            # A sitting a day, two people talking, as the summary's bullets say who and when.
            when = start + timedelta(days=n // 40, minutes=n % 40)
            queue.append(
                role, text, protected=False, name="Ana" if role == "user" else "Otto", occurred_at=when
            )
            if n % 100 == 99:
                took = timed(lambda: queue.compact(force=True))
                if n >= 100 * WARM_UP:
                    times.append(took)
        stats = latency(times)
        self.line("compaction 100 turns", stats, "compactions", "offline summariser, bullets re-abstracted")
        return stats

    def query_embedding(self, scale: Scale) -> dict[str, Any]:
        """The model alone, one question a call: on every core, and as the web process embeds it
        (one thread, ottoweb/cores.py), which is what a recall waits for."""
        asked = questions(scale.recalls + WARM_UP, seed=7)
        figures: dict[str, Any] = {}
        configured = int(os.environ.get("OTTO_EMBED_THREADS") or 0) or None  # None: every core
        for threads, label, key in (
            (configured, "query embedding", "every_core"),
            (1, "query embedding, one thread", "one_thread"),
        ):
            embeddings.use_threads(threads)
            embedder = embedding.embedder()
            for q in asked[:WARM_UP]:
                embedder.embed_query(q)
            stats = latency([timed(partial(embedder.embed_query, q)) for q in asked[WARM_UP:]])
            self.line(label, stats, "queries", "the model alone, one question")
            figures[key] = stats
        embeddings.use_threads(configured)
        return {**figures["every_core"], "one_thread": figures["one_thread"]}

    def recall_at(self, size: int, scale: Scale, user: Any, *, profile: bool, rate: bool) -> dict[str, Any]:
        """Recall's latency at `size` chunks; with `rate`, the embedding rate too (the session
        re-embedded whole: the appends embed as they go, so the build's time mixes both)."""
        session = services.create_session(user=user, sid=f"bench-recall-{size}")
        turns = chatter(size, seed=size)
        start = time.perf_counter()
        # Batches at the default budgets, compacting inline: no worker runs here, and a session that
        # never compacted (generation 0, no bullets) would make recall look cheaper than it is. Each
        # inline compaction embeds the session's pending turns after its commit.
        with override_settings(OTTO_COMPACTION="inline"):
            for first in range(0, size, BUILD_BATCH):
                items = [services.NewItem(role=r, text=t) for r, t in turns[first : first + BUILD_BATCH]]
                services.append_items(session=session, items=items)
        built = time.perf_counter() - start
        start = time.perf_counter()
        embedded = services.embed_items(session=session, kind="history")
        embed_s = time.perf_counter() - start
        reembedded, reembed_s = 0, 0.0
        if rate:
            start = time.perf_counter()
            reembedded = services.reembed_session(session=session)
            reembed_s = time.perf_counter() - start
        generation = TierState.objects.get(session=session, kind="history").generation
        live = Bullet.objects.of_kind(session, "history").live()
        bullets, protected = live.count(), live.filter(protected=True).count()
        asked = questions(scale.recalls + WARM_UP, seed=size)
        # Recall as the web process runs it (ottoweb/wsgi.py): one onnxruntime thread per query
        # embedding unless OTTO_EMBED_THREADS says otherwise. The build above used every core.
        build_threads = os.environ.get("OTTO_EMBED_THREADS")
        query_threads = int(build_threads or 1)
        embeddings.use_threads(query_threads)
        # ... and as many OpenBLAS threads (ottoweb/cores.py), for these recalls only.
        blas = threadpool_limits(limits=query_threads, user_api="blas")
        for q in asked[:WARM_UP]:
            recall(session, query=q)
        # A web process's first recall of the session builds its BM25 postings and reads its vectors.
        storage.vector_cache.clear()
        storage.keyword_cache.clear()
        storage.item_cache.clear()
        storage.turn_cache.clear()
        cold = timed(lambda: recall(session, query=asked[0]))
        # Each recall beside its question embedded alone, as the recall embeds it, in alternating
        # order: the machine's speed drifts over a run (the one-thread figure measured before the
        # sessions were built has been 3.2 to 7.2 ms on one machine), so the ratio of a recall to
        # the embedding it waits for is read from samples taken side by side.
        embedder = embedding.embedder()
        took: dict[str, list[float]] = {"recall": [], "embedding": []}
        for n, q in enumerate(asked[WARM_UP:]):
            pair: list[tuple[str, Callable[[], Any]]] = [
                ("recall", partial(recall, session, query=q)),
                ("embedding", partial(embedder.embed_query, q)),
            ]
            for name, call in pair if n % 2 else pair[::-1]:
                took[name].append(timed(call))
        stats = latency(took["recall"])
        beside = latency(took["embedding"])
        # Compactions embed as they go, so the build time holds most of the embedding for big sizes.
        stats.update(
            {
                "build_s": round(built, 1),
                "embed_s": round(embed_s, 1),
                "embedded": embedded,
                "reembedded": reembedded,
                "reembed_s": round(reembed_s, 2),
                "generations": generation,
                "live_bullets": bullets,
                "protected_bullets": protected,
                "first_recall_ms": round(cold * 1000, 1),
                "query_embedding_beside_ms": beside["p50_ms"],
            }
        )
        self.line(
            f"recall {size} chunks",
            stats,
            "recalls",
            f"generation {generation}, {bullets:,} live bullets of which {protected:,} protected; "
            f"built in {built:.0f} s with compactions' embedding, "
            f"then {embedded:,} more embedded in {embed_s:.0f} s; "
            f"query embedded with {query_threads} thread(s) as in the web process; "
            f"the first recall in a process (its caches cold) {cold * 1000:,.0f} ms; "
            f"its question embedded alone, between the recalls: p50 {beside['p50_ms']:.2f} ms",
        )
        if profile:
            # A second pass under the profiler, after the timed one: cProfile inflates what it times.
            profiler = cProfile.Profile()
            for q in asked[WARM_UP:]:
                profiler.runcall(recall, session, query=q)
            for order in ("cumulative", "tottime"):
                report = io.StringIO()
                pstats.Stats(profiler, stream=report).sort_stats(order).print_stats(25)
                self.emit(f"profile of {len(asked) - WARM_UP} recalls at {size} chunks, by {order}:")
                self.emit(report.getvalue())
        blas.restore_original_limits()
        embeddings.use_threads(int(build_threads) if build_threads else None)
        return stats
