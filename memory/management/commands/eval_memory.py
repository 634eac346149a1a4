"""`manage.py eval_memory --data LOCOMO.json`: replay LoCoMo through the real pipeline and score recall.

Each conversation becomes a session; every turn is appended through `services.append_items` (with
its speaker, session number and date as meta), so the tiers, compaction and vectors are the
product's own; every scored question is asked through `recall.recall`. It works in a throwaway
user's sessions, deleted at the end; `--keep-store DIR` runs in the data folder DIR instead and
leaves it behind, so the store can be re-scored without replaying.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.evaluation import locomo, private
from memory.evaluation.locomo_api import Answer


class Command(BaseCommand):
    help = "Replay LoCoMo conversations through tiers, compaction and recall; print coverage per category."

    def add_arguments(self, parser):
        parser.add_argument("--data", required=True, help="a LoCoMo JSON file (a list of conversations)")
        parser.add_argument(
            "--x-budget", type=int, default=None, help="X budget in tokens (default: the product's)"
        )
        parser.add_argument(
            "--y-budget", type=int, default=None, help="Y budget in tokens (default: the product's)"
        )
        parser.add_argument("--max-tokens", type=int, default=3000, help="recall budget per question")
        parser.add_argument("--model", default=None, help="embedding model spec (default: the database's)")
        parser.add_argument("--summarizer", choices=["offline", "live"], default="offline")
        parser.add_argument("--match", choices=["semantic", "keyword"], default="semantic")
        parser.add_argument("--show-items", choices=["failures", "all"], default=None)
        parser.add_argument("--keep-store", default=None, help="run in this data folder and keep it")
        parser.add_argument("--json", dest="json_out", default=None, help="write the figures here")
        parser.add_argument("--conversations", default=None, help="comma-separated sample ids to run")
        parser.add_argument(
            "--max-questions", type=int, default=None, help="per conversation, for quick runs"
        )
        parser.add_argument(
            "--rules-off",
            default=None,
            help="recall rules to switch off, comma-separated (memory/engine/ranking.py RULES), "
            "as OTTO_RECALL_RULES_OFF for the replay's processes: for ablations",
        )
        parser.add_argument(
            "--via-api",
            action="store_true",
            help="replay and ask over HTTP through the public API only (a web server and a worker "
            "are started on the private data folder)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not private.in_child():
            if options["summarizer"] == "live" and os.environ.get("OTTO_SUMMARIZER", "offline") == "offline":
                raise CommandError("--summarizer live needs OTTO_SUMMARIZER set to a live summariser")
            env = {"OTTO_EMBEDDING_MODEL": options["model"]} if options["model"] else {}
            if options["rules_off"] is not None:
                from memory.engine.ranking import ALL_RULES

                try:
                    ALL_RULES.without(r for r in options["rules_off"].split(",") if r)
                except ValueError as exc:
                    raise CommandError(f"--rules-off: {exc}") from exc
                env["OTTO_RECALL_RULES_OFF"] = options["rules_off"]
            raise SystemExit(
                private.rerun_privately(
                    "eval_memory", _as_argv(options), keep_store=options["keep_store"], env=env
                )
            )
        self._run(options)

    def _run(self, options: dict[str, Any]) -> None:
        data = json.loads(Path(options["data"]).read_text())
        conversations = locomo.load(data)
        if options["conversations"]:
            wanted = set(options["conversations"].split(","))
            conversations = [c for c in conversations if c.sample_id in wanted]
        x_budget = options["x_budget"] or settings.OTTO_X_BUDGET
        y_budget = options["y_budget"] or settings.OTTO_Y_BUDGET
        user, _ = get_user_model().objects.get_or_create(username="eval-memory")
        path = _ApiPath(user, options) if options["via_api"] else _ServicesPath(user, options)
        outcomes: list[locomo.Outcome] = []
        generations = 0
        dropped = 0
        try:
            for conv in conversations:
                dropped += len(conv.dropped_evidence)
                position_of, ask, conv_generations = path.replay(conv, x_budget, y_budget)
                generations += conv_generations
                text_of = {t.dia_id: t.text for t in conv.turns}
                stored = path.stored_texts(conv)
                questions = (
                    conv.questions[: options["max_questions"]] if options["max_questions"] else conv.questions
                )
                for q in questions:
                    answer = ask(q.question)
                    found = [position_of[e] in answer.returned for e in q.evidence]
                    evidence = [position_of[e] for e in q.evidence]
                    ahead, first = locomo.ahead_of(
                        answer.order, evidence, [position_of[e] for e in q.superseded]
                    )
                    others_ahead, others_first = locomo.ahead_of(
                        answer.order, evidence, [position_of[e] for e in q.distractors]
                    )
                    outcomes.append(
                        locomo.Outcome(
                            conversation=conv.sample_id,
                            category=q.category,
                            stored=all(text_of[e] in stored for e in q.evidence),
                            strict=all(found),
                            per_turn=sum(found) / len(found),
                            tokens=answer.tokens,
                            latency_ms=answer.latency_ms,
                            question=q.question,
                            evidence=q.evidence,
                            returned=answer.hits,
                            ahead=ahead if q.superseded else None,
                            first=first if q.superseded else None,
                            others_ahead=others_ahead if q.distractors else None,
                            others_first=others_first if q.distractors else None,
                        )
                    )
                    # A changed fact's question fails too when a superseded turn came back first; one
                    # with distractors is listed when one of them did (strict still counts it found).
                    failed = (
                        not all(found)
                        or (bool(q.superseded) and not ahead)
                        or (bool(q.distractors) and not others_ahead)
                    )
                    if options["show_items"] == "all" or (options["show_items"] == "failures" and failed):
                        self.stdout.write("\n".join(["", *describe(q, answer.order, position_of, text_of)]))
        finally:
            path.close()
        if generations == 0:
            self.stderr.write(
                f"no compaction fired at x-budget {x_budget} / y-budget {y_budget}: every turn stayed in the "
                "live tiers, so recall coverage would measure nothing about memory. Use smaller budgets "
                "(for example --x-budget 200 --y-budget 400) to force compaction."
            )
            raise SystemExit(1)
        figures = locomo.report(outcomes)
        figures.update(
            {
                "budgets": {"x": x_budget, "y": y_budget, "max_tokens": options["max_tokens"]},
                "generations": generations,
                "model": path.model,
                "via": "api" if options["via_api"] else "services",
                "dropped_evidence": dropped,
                "conversations": [c.sample_id for c in conversations],
                "leave_two_out": locomo.leave_two_out(outcomes),
            }
        )
        self.stdout.write(
            f"\neval_memory ({'over HTTP, public API only' if options['via_api'] else 'services in process'}): "
            f"{len(conversations)} conversation(s), {figures['n']} scored questions, "
            f"{generations} compaction generations, x/y budgets {x_budget}/{y_budget}, "
            f"recall budget {options['max_tokens']} tokens, model {path.model}, "
            f"{dropped} evidence id(s) naming no turn dropped"
        )
        self.stdout.write(locomo.table(figures))
        if figures.get("superseded"):
            s = figures["superseded"]
            self.stdout.write(
                f"questions about a changed fact: the current value's turn came before every superseded one "
                f"in {s['ahead']}% of {s['n']}, and was the first hit in {s['first']}%"
            )
        if figures.get("distractors"):
            d = figures["distractors"]
            self.stdout.write(
                f"questions with other people's similar turns (who, attributed): the evidence came before "
                f"every one of them in {d['ahead']}% of {d['n']}, and was the first hit in {d['first']}% "
                "(not counted in strict, which asks only that the evidence be returned)"
            )
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2))


class _ServicesPath:
    """Replay and ask through the services in this process (`services.append_items`, `recall`)."""

    def __init__(self, user: Any, options: dict[str, Any]) -> None:
        self.user = user
        self.options = options
        self.model = ""
        self.session: Any = None

    def replay(
        self, conv: locomo.Conversation, x_budget: int, y_budget: int
    ) -> tuple[dict[str, int], Callable[[str], Answer], int]:
        from memory import services
        from memory.recall import recall

        session, position_of = _replay(conv, self.user, x_budget, y_budget)
        self.session, self.model = session, session.embedding_model
        services.embed_items(session=session, kind="history")

        def ask(question: str) -> Answer:
            started = time.perf_counter()
            answer = recall(
                session,
                query=question,
                kind="history",
                match=self.options["match"],
                max_tokens=self.options["max_tokens"],
            )
            turns = [t for p in answer["results"]["history"] for t in p["turns"]]
            return Answer(
                returned=frozenset(t["position"] for t in turns),
                hits=tuple(t["text"] for t in turns if t["hit"]),
                order=tuple(t["position"] for t in turns if t["hit"]),
                tokens=answer["tokens"],
                latency_ms=(time.perf_counter() - started) * 1000,
            )

        return position_of, ask, session.tier_states.get(kind="history").generation

    def stored_texts(self, conv: locomo.Conversation) -> set[str]:
        from memory.models import Chunk

        return set(Chunk.objects.filter(session=self.session).values_list("text", flat=True))

    def close(self) -> None:
        pass


class _ApiPath:
    """Replay and ask over HTTP, the public API only, against a web server and a worker started
    here on the private data folder (memory/evaluation/locomo_api.py)."""

    def __init__(self, user: Any, options: dict[str, Any]) -> None:
        from accounts.services import issue_token
        from memory.evaluation.processes import serve_with_worker

        self.options = options
        self.server, self.worker = serve_with_worker(issue_token(user=user, name="eval-memory")[1])
        self.model = ""
        self.sid = ""

    def replay(
        self, conv: locomo.Conversation, x_budget: int, y_budget: int
    ) -> tuple[dict[str, int], Callable[[str], Answer], int]:
        from memory.evaluation import locomo_api

        self.sid = f"{conv.sample_id}-{int(time.time() * 1000)}"
        position_of, generations = locomo_api.replay(
            self.server, conv, sid=self.sid, x_budget=x_budget, y_budget=y_budget
        )
        self.model = self.server.expect(200, "GET", f"/api/v1/sessions/{self.sid}")["embedding_model"]
        ask = locomo_api.asker(
            self.server, self.sid, match=self.options["match"], max_tokens=self.options["max_tokens"]
        )
        return position_of, ask, generations

    def stored_texts(self, conv: locomo.Conversation) -> set[str]:
        # What the session holds, as its export (the public API's whole copy) says.
        document = self.server.expect(200, "GET", f"/api/v1/sessions/{self.sid}/export")
        return {c["text"] for c in document["chunks"]} | {p["text"] for p in document["pending"]}

    def close(self) -> None:
        self.worker.stop()
        self.server.stop()


def _as_argv(options: dict[str, Any]) -> list[str]:
    """Options back to command-line form, for the private-store subprocess (call_command use)."""
    argv = ["--data", str(Path(options["data"]).resolve())]
    for name in (
        "x_budget",
        "y_budget",
        "max_tokens",
        "model",
        "summarizer",
        "match",
        "show_items",
        "keep_store",
        "conversations",
        "max_questions",
    ):
        value = options.get(name)
        if value is not None:
            argv += [f"--{name.replace('_', '-')}", str(value)]
    if options.get("json_out"):
        argv += ["--json", str(Path(options["json_out"]).resolve())]
    if options.get("via_api"):
        argv.append("--via-api")
    return argv


def _replay(conv: locomo.Conversation, user: Any, x_budget: int, y_budget: int) -> tuple[Any, dict[str, int]]:
    """The conversation's session, replayed turn by turn (or reused from a kept store)."""
    from memory import services
    from memory.models import Item, Session

    kept = Session.objects.filter(
        user=user, title=conv.sample_id, x_budget=x_budget, y_budget=y_budget
    ).first()
    if kept is not None and kept.turns == len(conv.turns):
        rows = Item.objects.filter(session=kept, kind="history").values_list("meta", "position")
        return kept, {meta["dia_id"]: position for meta, position in rows}
    session = services.create_session(
        user=user,
        sid=f"{conv.sample_id}-{int(time.time() * 1000)}",
        title=conv.sample_id,
        x_budget=x_budget,
        y_budget=y_budget,
    )
    position_of: dict[str, int] = {}
    for turn in conv.turns:
        # Both LoCoMo speakers are people; protecting one side would keep half the conversation
        # verbatim and measure nothing about compaction. A turn's own role and name (the work
        # sessions') are used as the API path uses them (locomo.role_of, name_of).
        item = services.NewItem(
            role=locomo.role_of(conv, turn),
            text=turn.text,
            protected=False,
            name=locomo.name_of(turn),
            occurred_at=turn.occurred_at,
            meta={"dia_id": turn.dia_id},
        )
        outcome = services.append_items(session=session, items=[item])[0]
        position_of[turn.dia_id] = outcome.position
    return session, position_of


def describe(
    q: locomo.Question, order: Sequence[int], position_of: dict[str, int], text_of: dict[str, str]
) -> list[str]:
    """A question as --show-items prints it: its category and words, then each evidence turn's place
    among the turns returned (`#3`; `-` not returned), each superseded turn's (`was #1`) and each
    distractor's, another person's similar turn (`other #1`)."""
    rank = {p: n for n, p in reversed(list(enumerate(order, start=1)))}
    lines = [f"[{locomo.CATEGORIES[q.category]}] {q.question}"]
    for mark, turns in (("", q.evidence), ("was ", q.superseded), ("other ", q.distractors)):
        for e in turns:
            where = f"#{rank[position_of[e]]}" if position_of[e] in rank else "-"
            lines.append(f"  {mark}{where} {e}: {' '.join(text_of[e].split())[:160]}")
    return lines
