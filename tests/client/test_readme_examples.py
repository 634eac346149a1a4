"""The Python examples the READMEs, docs/mcp.md and docs/integrations.md show run as written against
a live server: a user copies them first, and an example that fails on its first line (a session never
created, a method renamed) tells them the product is broken. Only the server's address and the token
are put in. (The OpenAI Agents SDK and Google ADK examples call a model provider; their adapters are
tested against stub providers in this folder.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest
from ottoweb_client import Ottoweb

from tests.live import ROOT, Instance

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the examples, not the database, are tested

README_URL = "http://127.0.0.1:8000"
# How the examples spell the token they cannot know: inside a string, or as the whole string.
TOKEN_PLACEHOLDERS = ("otto_…", '"..."')


def examples(path: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / path).read_text(), flags=re.S)


def example(path: str) -> str:
    """The one Python example of `path`: there is one, so that a second cannot go untested."""
    (code,) = examples(path)
    return code


def run_example(code: str, server: Instance, tmp_path) -> str:
    assert README_URL in code and any(p in code for p in TOKEN_PLACEHOLDERS), (
        "the example's address or token moved"
    )
    code = code.replace(README_URL, server.url)
    code = code.replace("otto_…", server.token).replace('"..."', repr(server.token))
    if "await " in code:  # shown as a notebook or `python -m asyncio` would run it
        code = (
            "import asyncio\nasync def main():\n" + textwrap.indent(code, "    ") + "\nasyncio.run(main())\n"
        )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_readme_client_example_runs_and_prints_what_its_comment_says(fresh_server, tmp_path):
    out = run_example(example("README.md"), fresh_server, tmp_path)

    assert "not_found no session 'nobody'" in out


def test_the_client_readme_example_runs_and_finds_the_turn(fresh_server, tmp_path):
    out = run_example(example("clients/python/README.md"), fresh_server, tmp_path)

    assert "We land in Lisbon at 7:40 on Friday." in out


def test_the_mcp_example_runs_and_its_turn_arrives(fresh_server, tmp_path):
    run_example(example("docs/mcp.md"), fresh_server, tmp_path)

    view = Ottoweb(fresh_server.url, fresh_server.token).context("s1")
    assert [(t["role"], t["text"]) for t in view["x"]] == [("user", "hi")]  # created on first use


def test_the_langchain_example_runs_and_recalls_the_note_it_stored(fresh_server, tmp_path):
    (code,) = [c for c in examples("docs/integrations.md") if "langgraph" in c]

    out = run_example(code, fresh_server, tmp_path).splitlines()

    assert out == ['["The user\'s dog is called Biscuit."]', "Noted."]


def test_the_readme_curl_lines_all_answer_as_a_success(fresh_server, tmp_path):
    blocks = [
        b for b in re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S) if "curl" in b
    ]
    script = "\n".join(blocks)
    token_command = "$(.venv/bin/python manage.py create_token alice)"
    assert token_command in script and "localhost:8000/" in script, "the curl lines' token or address moved"
    script = script.replace(token_command, fresh_server.token).replace(
        "localhost:8000/", fresh_server.url + "/"
    )
    # Every curl fails the script on a 4xx or 5xx (curl's exit 22), and prints what it answered.
    prelude = 'set -euo pipefail\ncurl() { command curl --fail-with-body "$@"; echo; }\n'

    done = subprocess.run(
        ["bash", "-c", prelude + script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )

    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    exported = json.loads((tmp_path / "demo.json").read_text())
    assert "Never deploy on Fridays." in json.dumps(exported)
    assert '"tenant is acme.com"' in done.stdout  # the scoped note found again
