"""Fixtures shared by the evaluation commands' tests."""

from __future__ import annotations

import json
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
