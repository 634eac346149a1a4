"""tests/live.py's instances leave nothing behind: no process, no PostgreSQL database."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.live import ROOT, postgres_connection

# The instance is given PostgreSQL whatever the suite's database (PostgreSQL runs beside both), so
# the test runs once, in `make test`.
pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]


def live_databases() -> set[str]:
    with postgres_connection() as connection:
        rows = connection.execute("SELECT datname FROM pg_database WHERE datname LIKE 'otto_live_%'")
        return {name for (name,) in rows.fetchall()}


def test_an_instance_never_closed_has_its_database_dropped_when_its_process_ends(tmp_path):
    # A test that forgets close(), as a test process runs it: the process then ends normally.
    script = (
        "import sys; from pathlib import Path; from tests.live import Instance; "
        "print(Instance(Path(sys.argv[1]), DB='postgres').database)"
    )

    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    database = done.stdout.strip()
    assert database.startswith("otto_live_")
    assert database not in live_databases()
