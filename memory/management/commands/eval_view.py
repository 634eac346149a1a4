"""`manage.py eval_view --data LOCOMO.json`: how much of what was said is in the prompt view.

Replays LoCoMo through the public API as `eval_memory --via-api` does (a web server and a worker on
a private data folder, one batch per sitting, each turn with its speaker and its sitting's time,
`protected: false`), reads `GET /context` after the last turn (with --each-sitting, after every
sitting), and scores answer containment (memory/evaluation/view.py) against two baselines: the
newest raw turns that fit the view's own size, and those that fit the whole X + Y budget.
`--in-process` replays through the engine alone (no server, inline compaction) for quick tuning.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from memory.evaluation import locomo, private
from memory.evaluation import view as ev

X_BUDGET, Y_BUDGET = 800, 1800


class Command(BaseCommand):
    help = "Replay LoCoMo over the API and score how many answers the prompt view (GET /context) holds."

    def add_arguments(self, parser):
        parser.add_argument("--data", required=True, help="a LoCoMo JSON file (a list of conversations)")
        parser.add_argument(
            "--x-budget", type=int, default=X_BUDGET, help=f"X in tokens (default {X_BUDGET})"
        )
        parser.add_argument(
            "--y-budget", type=int, default=Y_BUDGET, help=f"Y in tokens (default {Y_BUDGET})"
        )
        parser.add_argument("--each-sitting", action="store_true", help="read the view after every sitting")
        parser.add_argument(
            "--in-process", action="store_true", help="replay through the engine alone (no server, quick)"
        )
        parser.add_argument("--conversations", default=None, help="comma-separated sample ids to run")
        parser.add_argument("--show", action="store_true", help="print each conversation's last view")
        parser.add_argument("--json", dest="json_out", default=None, help="write the figures here")
        parser.add_argument("--keep-store", default=None, help="run in this data folder and keep it")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["in_process"] and not private.in_child():
            raise SystemExit(
                private.rerun_privately(
                    "eval_view", _as_argv(options), keep_store=options["keep_store"], env={}
                )
            )
        conversations = locomo.load(json.loads(Path(options["data"]).read_text()))
        if options["conversations"]:
            wanted = set(options["conversations"].split(","))
            conversations = [c for c in conversations if c.sample_id in wanted]
        x, y = options["x_budget"], options["y_budget"]
        reader = _EngineReader(options) if options["in_process"] else _ApiReader(options)
        outcomes: list[ev.Outcome] = []
        readings: list[ev.Reading] = []
        try:
            for conv in conversations:
                for reading in reader.read(conv, x, y):
                    found, texts = ev.score(conv, reading, x_budget=x, y_budget=y)
                    outcomes += found
                    readings.append(reading)
                if options["show"]:
                    self.stdout.write(
                        f"\n--- {conv.sample_id}: the view after the last turn ---\n{texts['view']}"
                    )
        finally:
            reader.close()
        figures = ev.report(outcomes, readings)
        figures.update(
            {
                "budgets": {"x": x, "y": y},
                "via": "engine" if options["in_process"] else "api",
                "each_sitting": options["each_sitting"],
                "conversations": [c.sample_id for c in conversations],
                "protected_share": settings.OTTO_PROTECTED_SHARE,
                "summarizer": settings.OTTO_SUMMARIZER,
            }
        )
        when = "after every sitting" if options["each_sitting"] else "after the last turn"
        via = "the engine in process" if options["in_process"] else "the public API"
        self.stdout.write(
            f"\neval_view ({via}): {len(conversations)} conversation(s), x/y budgets {x}/{y}, the view "
            f"read {when} ({len(readings)} readings); {figures['n']} questions whose answer occurs in "
            f"the conversation so far; summariser {settings.OTTO_SUMMARIZER}"
        )
        self.stdout.write(ev.table(figures))
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2))


class _EngineReader:
    """The conversation through a TieredQueue over an in-memory store, compacting inline."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.each_sitting = options["each_sitting"]

    def read(self, conv: locomo.Conversation, x: int, y: int) -> list[ev.Reading]:
        from memory.engine.memstore import InMemoryStore
        from memory.engine.queue import TieredQueue, render_view
        from memory.services.compaction import summarizer_for

        store = InMemoryStore()
        queue = TieredQueue(
            store,
            x_budget=x,
            y_budget=y,
            summarize=summarizer_for(settings.OTTO_SUMMARIZER),
            protected_share=settings.OTTO_PROTECTED_SHARE,
        )
        readings = []
        for n, turn in enumerate(conv.turns):
            appended = queue.append(
                ev.role_of(conv, turn),
                turn.text,
                protected=False,
                name=locomo.name_of(turn),
                occurred_at=turn.occurred_at,
            )
            if appended.needs_compaction:
                queue.compact()
            last = n == len(conv.turns) - 1
            if last or (self.each_sitting and conv.turns[n + 1].session != turn.session):
                totals = store.totals("history")
                text = render_view(queue.current_view())
                readings.append(
                    ev.Reading(
                        conv.sample_id,
                        turn.session,
                        text,
                        totals.x + totals.y,
                        {"total": totals.x + totals.y},
                    )
                )
        return readings

    def close(self) -> None:
        pass


class _ApiReader:
    """The conversation over HTTP (`locomo_api.replay`), the view read through GET /context."""

    def __init__(self, options: dict[str, Any]) -> None:
        from django.contrib.auth import get_user_model

        from accounts.services import issue_token
        from memory.evaluation.processes import serve_with_worker

        user, _ = get_user_model().objects.get_or_create(username="eval-view")
        self.each_sitting = options["each_sitting"]
        self.server, self.worker = serve_with_worker(issue_token(user=user, name="eval-view")[1])

    def read(self, conv: locomo.Conversation, x: int, y: int) -> list[ev.Reading]:
        from memory.evaluation import locomo_api

        sid = f"{conv.sample_id}-{int(time.time() * 1000)}"
        readings: list[ev.Reading] = []

        def read_view(sitting: int) -> None:
            context = self.server.expect(200, "GET", f"/api/v1/sessions/{sid}/context")
            readings.append(
                ev.Reading(
                    conv.sample_id, sitting, context["text"], context["tokens"]["total"], context["tokens"]
                )
            )

        locomo_api.replay(
            self.server,
            conv,
            sid=sid,
            x_budget=x,
            y_budget=y,
            after_sitting=read_view if self.each_sitting else None,
        )
        if not self.each_sitting:
            read_view(conv.turns[-1].session)
        return readings

    def close(self) -> None:
        self.worker.stop()
        self.server.stop()


def _as_argv(options: dict[str, Any]) -> list[str]:
    argv = ["--data", str(Path(options["data"]).resolve())]
    argv += ["--x-budget", str(options["x_budget"]), "--y-budget", str(options["y_budget"])]
    for flag in ("each_sitting", "show"):
        if options[flag]:
            argv.append(f"--{flag.replace('_', '-')}")
    if options["conversations"]:
        argv += ["--conversations", options["conversations"]]
    if options["json_out"]:
        argv += ["--json", str(Path(options["json_out"]).resolve())]
    return argv
