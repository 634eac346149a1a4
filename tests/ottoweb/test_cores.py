"""The web process spends one core on each request's computation (ottoweb/cores.py): one
onnxruntime thread per embedding and one OpenBLAS thread per matrix product, unless
OTTO_EMBED_THREADS says otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, os
from threadpoolctl import threadpool_info
import ottoweb.{module}
from memory.engine import config
blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({{"blas": blas, "embed": config.current().embed_threads}}))
"""


def served_by(module: str, tmp_path, **env: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if k not in ("OTTO_EMBED_THREADS", "PYTEST_VERSION")}
    environment.update(OTTO_DATA_DIR=str(tmp_path), OPENBLAS_NUM_THREADS="2", **env)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["asgi", "wsgi"])
def test_the_web_process_runs_each_request_on_one_core(module, tmp_path):
    # OpenBLAS was told two threads at load, as it takes every core by default.
    assert served_by(module, tmp_path) == {"blas": [1], "embed": 1}


def test_otto_embed_threads_gives_the_web_process_more(tmp_path):
    assert served_by("asgi", tmp_path, OTTO_EMBED_THREADS="2") == {"blas": [2], "embed": 2}
