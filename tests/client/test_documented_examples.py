"""The Python examples the READMEs, docs/mcp.md and docs/integrations.md show run as written against
a live server: a user copies them first, and an example that fails on its first line (a session never
created, a method renamed) tells them the product is broken. Only the server's address and the token
are put in. The OpenAI Agents SDK and Google ADK examples call a model provider: a local stub of its API
answers them, reached through the provider library's own base-URL setting."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest
from ottoweb_client import Ottoweb

from tests.live import ROOT, Instance
from tests.stubs import Handler, StubServer

pytestmark = [pytest.mark.slow, pytest.mark.sqlite_pass]  # the examples, not the database, are tested

README_URL = "http://127.0.0.1:8000"
# How the examples spell the token they cannot know: inside a string, or as the whole string.
TOKEN_PLACEHOLDERS = {"otto_…": lambda token: token, '"..."': repr}


def examples(path: str, language: str = "python") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (ROOT / path).read_text(), flags=re.S)


def example(path: str) -> str:
    """The one Python example of `path`: there is one, so that a second cannot go untested."""
    (code,) = examples(path)
    return code


def run_example(code: str, server: Instance, tmp_path, **env: str) -> str:
    assert README_URL in code and any(p in code for p in TOKEN_PLACEHOLDERS), (
        "the example's address or token moved"
    )
    code = code.replace(README_URL, server.url)
    for placeholder, spelled in TOKEN_PLACEHOLDERS.items():
        code = code.replace(placeholder, spelled(server.token))
    if re.search(r"^(await|async with|async for) ", code, flags=re.M):  # as `python -m asyncio` runs it
        code = (
            "import asyncio\nasync def main():\n" + textwrap.indent(code, "    ") + "\nasyncio.run(main())\n"
        )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
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
    # It used RunnableWithMessageHistory, which langchain-core deprecates (a warning when it ran).
    deprecated_is_an_error = (
        "import warnings\nfrom langchain_core._api.deprecation import LangChainDeprecationWarning\n"
        'warnings.simplefilter("error", LangChainDeprecationWarning)\n'
    )

    out = run_example(deprecated_is_an_error + code, fresh_server, tmp_path).splitlines()

    assert out == ['["The user\'s dog is called Biscuit."]', "Noted."]
    view = Ottoweb(fresh_server.url, fresh_server.token).context("demo")  # the thread's session
    assert [(t["role"], t["text"]) for t in view["x"]] == [
        ("user", "Never deploy on Fridays."),
        ("assistant", "Noted."),
    ]


def test_the_readme_curl_lines_all_answer_as_a_success(fresh_server, tmp_path):
    blocks = [b for b in examples("README.md", "sh") if "curl" in b]
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


def responses_stub(path: str, body: dict) -> tuple[int, dict]:
    """OpenAI's Responses API: asked anything, call `recall`; given what it found, say it."""
    found = [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    if found:
        item = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"From memory: {found[-1]}", "annotations": []}],
        }
    else:
        query = json.dumps({"query": "replacement order shipped"})
        item = {
            "id": "fc_1",
            "type": "function_call",
            "call_id": "call_1",
            "name": "recall",
            "arguments": query,
        }
    return 200, {
        "id": "resp_1",
        "object": "response",
        "created_at": int(time.time()),
        "model": body["model"],
        "status": "completed",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def test_the_openai_agents_example_runs_its_recall_tool_and_keeps_the_conversation(fresh_server, tmp_path):
    (code,) = [c for c in examples("docs/integrations.md") if "from agents import" in c]
    otto = Ottoweb(fresh_server.url, fresh_server.token)
    otto.create_session("support-42", x_budget=4000, y_budget=12000)
    otto.append("support-42", "assistant", "The replacement order shipped to the Porto warehouse.")

    with StubServer(responses_stub) as stub:
        out = run_example(
            code,
            fresh_server,
            tmp_path,
            OPENAI_BASE_URL=stub.url + "/v1",
            OPENAI_API_KEY="sk-stub",
            OPENAI_AGENTS_DISABLE_TRACING="1",
        )

    assert "From memory:" in out and "Porto warehouse" in out  # the tool called recall and got the turn
    assert [path for path, _, _ in stub.requests] == ["/v1/responses", "/v1/responses"]
    said = [t["text"] for t in otto.context("support-42")["x"]]
    assert said[1] == "Where did we ship the replacement order?" and "Porto warehouse" in said[-1]


def gemini_stub(path: str, body: dict) -> tuple[int, dict]:
    """Gemini's generateContent: "Noted." to anything."""
    assert path.endswith("/models/gemini-2.0-flash:generateContent"), path
    return 200, {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Noted."}]}, "finishReason": "STOP"}]
    }


def test_the_adk_example_remembers_the_first_session_and_finds_it(fresh_server, tmp_path):
    (code,) = [c for c in examples("docs/integrations.md") if "google.adk" in c]

    with StubServer(gemini_stub) as stub:
        out = run_example(
            code, fresh_server, tmp_path, GOOGLE_GEMINI_BASE_URL=stub.url, GOOGLE_API_KEY="stub-key"
        )

    assert stub.requests  # the agent's model was called, through google-genai
    assert "user My sister Ana moved to Lisbon in May." in out


# What OpenAI answers a send past the model's window (HTTP 400).
TOO_LONG = {
    "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
    "9100 tokens.",
    "type": "invalid_request_error",
    "code": "context_length_exceeded",
}


def chat_stub() -> Handler:
    """OpenAI's chat completions: the first send refused as too long, then a call of read_file, then
    an answer quoting what the tool read."""
    sends: list[dict] = []

    def handle(path: str, body: dict) -> tuple[int, dict]:
        assert path == "/v1/chat/completions", path
        sends.append(body)
        if len(sends) == 1:
            return 400, {"error": TOO_LONG}
        read = [m["content"] for m in body["messages"] if m["role"] == "tool"]
        call = {"name": "read_file", "arguments": json.dumps({"path": "tests/test_login.py"})}
        message = (
            {"role": "assistant", "content": f"It reads: {read[-1]}"}
            if read
            else {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": call}]}
        )
        return 200, {
            "id": f"chatcmpl-{len(sends)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop" if read else "tool_calls"}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 10, "total_tokens": 50},
        }

    return handle


def test_the_runs_agent_loop_fits_before_each_call_and_learns_the_limit_it_was_refused_for(
    fresh_server, tmp_path
):
    (code,) = examples("docs/runs.md")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_login.py").write_text("assert login(cookie='expired') == 200\n")

    with StubServer(chat_stub()) as stub:
        out = run_example(
            code, fresh_server, tmp_path, OPENAI_BASE_URL=stub.url + "/v1", OPENAI_API_KEY="sk-stub"
        )

    assert out == "It reads: assert login(cookie='expired') == 200\n\n"
    assert len(stub.requests) == 3  # refused, then the call of read_file, then the answer
    learned = Ottoweb(fresh_server.url, fresh_server.token).model_windows(model="openai:gpt-4o")
    assert learned["items"] == [{"model": "openai:gpt-4o", "window": 8192, "source": "learned"}]


def test_every_python_example_of_the_docs_is_one_of_those_run_here():
    documents = [ROOT / "README.md", ROOT / "clients/python/README.md", *sorted((ROOT / "docs").glob("*.md"))]
    shown = {str(d.relative_to(ROOT)): len(examples(str(d.relative_to(ROOT)))) for d in documents}

    # A new example goes into a test above, then into this list.
    assert {path: n for path, n in shown.items() if n} == {
        "README.md": 1,
        "clients/python/README.md": 1,
        "docs/integrations.md": 3,
        "docs/mcp.md": 1,
        "docs/runs.md": 1,
    }


def test_every_pip_install_of_the_client_names_a_checkout_not_the_package_index():
    """ottoweb-client is on no package index: `pip install 'ottoweb-client[adk]'` fails (or, were the
    name ever taken there, installs someone else's package). Every install line gives a path."""
    documents = [
        ROOT / "README.md",
        ROOT / "clients/python/README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "clients/python/ottoweb_client").glob("*.py")),
    ]
    installs = {
        f"{d.relative_to(ROOT)}: {m}"
        for d in documents
        for m in re.findall(r"pip install\s+(['\"]?[^\s`'\"]+)", d.read_text())
        if "clients/python" in m or "ottoweb" in m
    }

    assert installs and all("clients/python" in i.split(": ", 1)[1] for i in installs), sorted(installs)
