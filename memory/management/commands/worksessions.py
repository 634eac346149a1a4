"""`manage.py worksessions --split dev|holdout|all --out FILE`: write the agent work sessions.

The second evaluation set (memory/evaluation/worksessions.py): 21 seeded sessions of a person
directing a coding agent, in LoCoMo's JSON format, for `manage.py eval_memory --data FILE`. Session n
is in the holdout when n is divisible by 3 (3, 6, …, 21), in dev otherwise; the holdout is not for
tuning or for measuring while tuning.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand

from memory.evaluation import locomo, worksessions


class Command(BaseCommand):
    help = "Write the agent work sessions (a second evaluation set) as LoCoMo-format JSON."

    def add_arguments(self, parser):
        parser.add_argument("--split", choices=["dev", "holdout", "all"], default="dev")
        parser.add_argument("--out", required=True, help="the JSON file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        data = worksessions.build(options["split"])
        Path(options["out"]).write_text(json.dumps(data, indent=1, ensure_ascii=False))
        turns = sum(len(c.turns) for c in locomo.load(data))
        counts = Counter(q["category"] for s in data for q in s["qa"])
        per = ", ".join(f"{locomo.CATEGORIES[n]} {counts[n]}" for n in sorted(counts))
        self.stdout.write(
            f"{options['out']}: {len(data)} sessions ({options['split']}), {turns} turns, "
            f"{sum(counts.values())} questions ({per})"
        )
