"""`manage.py team_channel --split dev|holdout|all --out FILE`: write the team channel sessions.

The fifth evaluation set (memory/evaluation/team_channel.py): 18 seeded channels where 3–6 people
share one agent, in LoCoMo's JSON format, for `manage.py eval_memory --data FILE`. Session n is in
the holdout when n is divisible by 3 (3, 6, …, 18), in dev otherwise; the holdout is not for tuning
or for measuring while tuning.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.evaluation import locomo, team_channel


class Command(BaseCommand):
    help = "Write the team channel sessions (a fifth evaluation set) as LoCoMo-format JSON."

    def add_arguments(self, parser):
        parser.add_argument("--split", choices=["dev", "holdout", "all"], default="dev")
        parser.add_argument("--out", required=True, help="the JSON file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        data = team_channel.build(options["split"])
        self.stdout.write(locomo.write(data, options["out"], options["split"]))
