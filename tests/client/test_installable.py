"""The client is a package of its own: its wheel, built from the checkout, installs into a fresh
virtual environment that holds nothing of the project, and recalls from a live server there."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.live import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the package, not the database, is tested

# Run by the fresh environment's Python with -I: no current directory, no PYTHONPATH, no user site.
AGENT = textwrap.dedent(
    """
    import importlib.util, json, sys
    from ottoweb_client import Ottoweb, OttowebError

    url, token = sys.argv[1:3]
    otto = Ottoweb(url, token)
    otto.create_session("trip")
    otto.append("trip", "user", "We land in Lisbon at 7:40 on Friday.", name="ada")
    otto.append("trip", "assistant", "Noted: the hotel is in Alfama.")
    found = otto.recall("trip", "When do we land in Lisbon?", match="keyword")
    try:
        otto.get_session("nobody")
        refused = None
    except OttowebError as e:
        refused = e.code
    print(json.dumps({
        "client": importlib.util.find_spec("ottoweb_client").origin,
        "project": [m for m in ("memory", "ottoweb", "django") if importlib.util.find_spec(m)],
        "first": [turn["text"] for turn in found["results"]["history"][0]["turns"]],
        "refused": refused,
    }))
    """
)


# Without PYTHONPATH: a checkout's client on it (the client tests' own setting) is one pip in the
# fresh environment counts as installed, so it would install nothing.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(*argv: str | Path, cwd: Path) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=CLEAN_ENV, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_wheel_installs_into_a_fresh_environment_and_recalls_from_a_live_server(server, tmp_path):
    wheels = tmp_path / "wheels"
    # Offline: the build uses this environment's setuptools; the package needs nothing else.
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        wheels,
        ROOT / "clients" / "python",
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("ottoweb_client-*.whl")
    fresh = tmp_path / "agent-env"
    run(sys.executable, "-m", "venv", fresh, cwd=tmp_path)
    run(fresh / "bin" / "python", "-m", "pip", "install", "--no-index", "--no-deps", wheel, cwd=tmp_path)

    out = json.loads(run(fresh / "bin" / "python", "-I", "-c", AGENT, server.url, server.token, cwd=tmp_path))

    assert Path(out["client"]).is_relative_to(fresh)  # the installed copy, not the checkout's
    assert out["project"] == []  # nothing of the project (nor Django) in that environment
    assert "We land in Lisbon at 7:40 on Friday." in out["first"]
    assert out["refused"] == "not_found"


# The names of `typing` (and other standard modules) the package may import, by the Python release
# that added them: a name newer than `requires-python` is an ImportError on the oldest Python pip
# installs the package into (no interpreter that old is at hand to run the import itself).
ADDED_IN = {
    ("typing", "NotRequired"): (3, 11),
    ("typing", "Required"): (3, 11),
    ("typing", "Self"): (3, 11),
    ("typing", "LiteralString"): (3, 11),
    ("typing", "Never"): (3, 11),
    ("typing", "assert_never"): (3, 11),
    ("typing", "Unpack"): (3, 11),
    ("typing", "TypeVarTuple"): (3, 11),
    ("typing", "override"): (3, 12),
    ("typing", "TypeAliasType"): (3, 12),
    ("typing", "ReadOnly"): (3, 13),
    ("typing", "TypeIs"): (3, 13),
    ("datetime", "UTC"): (3, 11),
    ("enum", "StrEnum"): (3, 11),
    ("tomllib", None): (3, 11),
}


def test_requires_python_is_no_older_than_what_the_package_imports():
    package = ROOT / "clients" / "python"
    spec = tomllib.loads((package / "pyproject.toml").read_text())["project"]["requires-python"]
    oldest = tuple(int(n) for n in re.fullmatch(r">=\s*(\d+)\.(\d+)", spec).groups())  # type: ignore[union-attr]
    needed = {}
    for source in sorted((package / "ottoweb_client").glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [(node.module, alias.name) for alias in node.names]
            elif isinstance(node, ast.Import):
                names = [(alias.name, None) for alias in node.names]
            else:
                continue
            for name in names:
                if name in ADDED_IN and ADDED_IN[name] > oldest:
                    needed[f"{source.name}: {name}"] = ADDED_IN[name]

    assert needed == {}, f"requires-python {spec} is older than these imports need"


def next_major(version: Version) -> Version:
    """The first release that may break what was tested: the next major (the next minor of a 0.x,
    whose minor releases are its breaking ones)."""
    major, minor = version.release[0], version.release[1]
    return Version(f"{major + 1}") if major else Version(f"0.{minor + 1}")


def test_every_extra_admits_the_pinned_release_and_caps_the_next_major():
    # `pip install '…[adk]'` in a fresh environment installed google-adk 2.x, the adapter being
    # tested against requirements.txt's 1.1.1.
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("#")[0].strip().split("==")
            pins[canonicalize_name(name)] = Version(version)
    extras = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text())["project"]
    wrong = {}
    for extra, requirements in extras["optional-dependencies"].items():
        for line in requirements:
            requirement = Requirement(line)
            pinned = pins[canonicalize_name(requirement.name)]
            if pinned not in requirement.specifier or next_major(pinned) in requirement.specifier:
                wrong[f"[{extra}] {line}"] = str(pinned)

    assert wrong == {}, "each extra takes requirements.txt's release and stops before its next major"
