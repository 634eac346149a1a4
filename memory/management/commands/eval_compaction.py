"""`manage.py eval_compaction [--lengths 120,400] [--abstract-once] [--seed N] [--json OUT]`.

The constraint-survival benchmark (docs/decisions.md, "A person's words") (the harness is `memory/evaluation/compaction.py`): eight
constraints planted in the person's turns of a synthetic conversation, replayed per policy with the
deterministic extractive summariser, counted verbatim in the final prompt view. Touches no database.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from memory.evaluation import compaction as ec


def _lengths(value: str) -> list[int]:
    try:
        lengths = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise CommandError(f"--lengths takes comma-separated turn counts, not {value!r}") from None
    if not lengths or min(lengths) < 2 * len(ec.CONSTRAINTS):
        raise CommandError(f"every length must be at least {2 * len(ec.CONSTRAINTS)} turns")
    return lengths


class Command(BaseCommand):
    help = "Count how many planted constraints survive each compaction policy (docs/decisions.md)."

    def add_arguments(self, parser):
        parser.add_argument("--lengths", default=",".join(str(n) for n in ec.LENGTHS), help="turn counts")
        parser.add_argument(
            "--abstract-once",
            action="store_true",
            help="also run every policy with REABSTRACT off (prior bullets never re-summarised)",
        )
        parser.add_argument("--seed", type=int, default=3, help="the synthetic conversation's seed")
        parser.add_argument("--json", dest="json_out", default=None, help="write the figures to this file")

    def handle(self, *args, lengths: str, abstract_once: bool, seed: int, json_out: str | None, **options):
        results = ec.run(lengths=_lengths(lengths), abstract_once=abstract_once, seed=seed)
        total = len(ec.CONSTRAINTS)
        self.stdout.write(ec.table(results, total))
        self.stdout.write("")
        budgets = ", ".join(f"{b.name} X={b.x} Y={b.y}" for b in ec.BUDGETS)
        self.stdout.write(f"budgets (tokens): {budgets}; summariser: offline extractive; seed {seed}")
        for arm, outcomes in results:
            cells = "; ".join(
                f"{o.turns} turns: {o.generations} generations, "
                f"{len(o.in_bullets)} of {len(o.kept)} kept came through compaction"
                for o in outcomes
            )
            self.stdout.write(f"  {arm.label}: {cells}")
        bounded = ec.run_bounded(seed=seed)
        self.stdout.write("")
        self.stdout.write(
            f"bounded protected turns (OTTO_PROTECTED_SHARE {ec.BOUNDED_SHARE}; the seed rows above leave "
            "them unbounded): constraints verbatim in the view · found by keyword recall "
            f"(top {ec.RECALL_K}), and the person's turns as a multiple of Y"
        )
        self.stdout.write(ec.bounded_table(bounded, total))
        if json_out:
            figures = {
                "constraints": list(ec.CONSTRAINTS),
                "lengths": [o.turns for o in results[0][1]],
                "summarizer": "offline",
                "seed": seed,
                "budgets": {b.name: {"x": b.x, "y": b.y} for b in ec.BUDGETS},
                "rows": [
                    {
                        "policy": arm.label,
                        "protect": arm.protect,
                        "budget": arm.budget.name,
                        "reabstract": arm.reabstract,
                        "results": {
                            str(o.turns): {
                                "kept": len(o.kept),
                                "total": total,
                                "generations": o.generations,
                                "view_tokens": o.view_tokens,
                                "survivors": o.kept,
                                "in_bullets": o.in_bullets,
                                "lost": o.lost,
                            }
                            for o in outcomes
                        },
                    }
                    for arm, outcomes in results
                ],
            }
            figures["bounded"] = [
                {
                    "policy": arm.label,
                    "budget": arm.budget.name,
                    "protected_share": arm.protected_share,
                    "results": {
                        str(o.turns): {
                            "in_view": len(o.kept),
                            "recalled": len(o.recalled),
                            "total": total,
                            "person_tokens": o.person_tokens,
                            "view_tokens": o.view_tokens,
                            "peak_view_tokens": o.peak_view_tokens,
                            "largest_turn": o.largest_turn,
                            "bound": arm.budget.x + arm.budget.y + o.largest_turn,
                            "generations": o.generations,
                            "not_in_view": o.lost,
                        }
                        for o in outcomes
                    },
                }
                for arm, outcomes in bounded
            ]
            Path(json_out).write_text(json.dumps(figures, indent=2) + "\n")
            self.stdout.write(f"figures written to {json_out}")
