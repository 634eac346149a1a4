"""`manage.py corrections --split dev|holdout|all|extra --out FILE`: write the corrections set.

A fourth evaluation set (memory/evaluation/corrections.py): 20 seeded sessions (work sessions of the
extra split and assistant sessions as filler) into which facts with a later correction, and controls
confirmed unchanged, are planted; in LoCoMo's JSON format, for `manage.py eval_memory --data FILE`.
Categories 9 (correction) and 10 (unchanged). Session n is in the holdout when n is divisible by 3
(3, 6, …, 18), in dev otherwise; the holdout is not for tuning or for measuring while tuning.
"extra" is 20 more sessions of the same generator on other fillers.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.evaluation import corrections, locomo


class Command(BaseCommand):
    help = "Write the corrections set (facts corrected later, and controls) as LoCoMo-format JSON."

    def add_arguments(self, parser):
        parser.add_argument("--split", choices=corrections.SPLITS, default="dev")
        parser.add_argument("--out", required=True, help="the JSON file to write")

    def handle(self, *args: Any, **options: Any) -> None:
        data = corrections.build(options["split"])
        self.stdout.write(locomo.write(data, options["out"], options["split"]))
