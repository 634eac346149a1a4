"""Evaluation commands run on a data folder of their own, never the user's database."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from django.conf import settings

# Set in the child: the command may write to the data folder it runs on.
CHILD_FLAG = "OTTO_EVAL_CHILD"


def in_child() -> bool:
    return os.environ.get(CHILD_FLAG) == "1"


def rerun_privately(command: str, argv: list[str], *, keep_store: str | None, env: dict[str, str]) -> int:
    """Run `manage.py command argv` again in a subprocess on a fresh data folder (or `keep_store`,
    left behind), migrated first; return its exit code. `env` is added to the child's environment.

    Compaction runs inline in the child: a replay must not depend on a worker being up, and measures
    the same engine either way (the --via-api paths start their own worker in job mode).
    """
    folder = keep_store or tempfile.mkdtemp(prefix=f"ottoweb-{command}-")
    child = {
        **os.environ,
        "OTTO_DATA_DIR": str(Path(folder).resolve()),
        CHILD_FLAG: "1",
        "OTTO_COMPACTION": "inline",
        **env,
    }
    manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
    try:
        subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=child, check=True)
        return subprocess.run([*manage, command, *argv], env=child).returncode
    finally:
        if not keep_store:
            shutil.rmtree(folder, ignore_errors=True)
