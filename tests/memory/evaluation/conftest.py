"""Fixtures shared by the evaluation commands' tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEV = ROOT.parent / "shared" / "data" / "locomo" / "locomo10_dev.json"


@pytest.fixture(scope="module")
def small_conversation(tmp_path_factory) -> Path:
    """conv-26 cut to its first three sessions, with the questions those sessions answer."""
    conv = json.loads(DEV.read_text())[0]
    keep = {f"session_{n}" for n in (1, 2, 3)} | {f"session_{n}_date_time" for n in (1, 2, 3)}
    conv["conversation"] = {
        k: v for k, v in conv["conversation"].items() if k in keep or k in ("speaker_a", "speaker_b")
    }
    known = {t["dia_id"] for n in (1, 2, 3) for t in conv["conversation"][f"session_{n}"]}
    conv["qa"] = [q for q in conv["qa"] if q.get("evidence") and set(q["evidence"]) <= known]
    path = tmp_path_factory.mktemp("locomo") / "small.json"
    path.write_text(json.dumps([conv]))
    return path


def run_manage(command: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`manage.py command args` in a subprocess, as a user runs it, with a data folder of its own."""
    env = {"PATH": "/usr/bin:/bin", "OTTO_DATA_DIR": str(tmp_path / "caller")}
    return subprocess.run(
        [sys.executable, "manage.py", command, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
