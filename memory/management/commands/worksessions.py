"""`manage.py worksessions --split dev|holdout|all|extra --out FILE`: write the agent work sessions.

The second evaluation set (memory/evaluation/worksessions.py): 21 seeded sessions of a person
directing a coding agent, in LoCoMo's JSON format, for `manage.py eval_memory --data FILE`. Session n
is in the holdout when n is divisible by 3 (3, 6, …, 21), in dev otherwise; the holdout is not for
tuning or for measuring while tuning. `extra` is 24 more sessions after the set's (22–45), new
sessions of the same kind for a check once the holdout has been seen.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.evaluation import locomo, worksessions


class Command(BaseCommand):
    help = "Write the agent work sessions (a second evaluation set) as LoCoMo-format JSON."

    def add_arguments(self, parser):
        parser.add_argument("--split", choices=worksessions.SPLITS, default="dev")
        parser.add_argument("--out", required=True, help="the JSON file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        data = worksessions.build(options["split"])
        self.stdout.write(locomo.write(data, options["out"], options["split"]))
