"""The SQLite backend's connections: sqlite-vec loaded, WAL, and the busy timeout the settings name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("PRAGMA busy_timeout")
    waits = cursor.fetchone()[0]
    cursor.execute("PRAGMA journal_mode")
    journal = cursor.fetchone()[0]
    cursor.execute("select vec_version()")
    print(waits, journal, bool(cursor.fetchone()[0]))
"""

pytestmark = pytest.mark.sqlite_pass


@pytest.mark.parametrize(("setting", "milliseconds"), [(None, 10000), ("3", 3000)])
def test_a_write_waits_for_another_writers_lock_as_long_as_the_setting_says(tmp_path, setting, milliseconds):
    env = {"PATH": "/usr/bin:/bin", "OTTO_DATA_DIR": str(tmp_path), "DB": "sqlite"}
    if setting is not None:
        env["OTTO_SQLITE_BUSY_SECONDS"] = setting
    code = f"import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'ottoweb.settings'); django.setup()\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(milliseconds), "wal", "True"]
