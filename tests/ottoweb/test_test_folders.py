"""A test run's data folder: its own, and one of its own for each of `make test`'s processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.sqlite_pass  # the settings' folders, the same on both databases


def data_dir(**env: str) -> Path:
    """settings.DATA_DIR as a process with `env` (and pytest's own variable) reads it."""
    code = "import django; from django.conf import settings; django.setup(); print(settings.DATA_DIR)"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "ottoweb.settings",
            "PYTEST_VERSION": "9",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def test_each_xdist_process_takes_a_folder_of_its_own_inside_the_runs(tmp_path):
    run = str(tmp_path)

    assert data_dir(OTTO_DATA_DIR=run, OTTO_TEST_RUN_DIR=run, PYTEST_XDIST_WORKER="gw1") == tmp_path / "gw1"
    # Without xdist the run's own folder.
    assert data_dir(OTTO_DATA_DIR=run, OTTO_TEST_RUN_DIR=run) == tmp_path


def test_a_process_a_test_starts_keeps_the_folder_it_is_given(tmp_path):
    given = tmp_path / "instance"

    # A live server started from an xdist process inherits its variables, and its own folder.
    assert (
        data_dir(OTTO_DATA_DIR=str(given), OTTO_TEST_RUN_DIR=str(tmp_path), PYTEST_XDIST_WORKER="gw0")
        == given
    )
    # A process inheriting the xdist process's folder stays in it (no gw0/gw0).
    inherited = tmp_path / "gw0"
    assert (
        data_dir(OTTO_DATA_DIR=str(inherited), OTTO_TEST_RUN_DIR=str(tmp_path), PYTEST_XDIST_WORKER="gw0")
        == inherited
    )


def test_a_run_without_a_folder_makes_a_new_one_outside_the_project(tmp_path):
    first, second = data_dir(), data_dir()

    assert first != second
    assert first.name.startswith("ottoweb-test-") and not first.is_relative_to(ROOT)
