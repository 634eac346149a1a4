"""Real-browser tests: Debian's Chromium driven by Playwright against a live ottoweb and a real worker.

One instance (web server + Celery worker on a private OTTO_DATA_DIR) serves the whole package; each
test makes its own sessions through the API, so tests do not depend on each other's order.
Screenshots of every screen go to artifacts/screenshots/.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from tests.live import ROOT, Instance

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = ROOT / "artifacts" / "screenshots"

# A coding agent's conversation: facts a person would search for, spread through ordinary turns.
FACTS = {
    4: ("user", "Rule for this repo: never deploy on Fridays, and never without a green CI run."),
    11: ("tool", "ERROR ERR_QUOTA_7731: build cache quota exceeded on runner ci-4 (used 19.8 GB of 20 GB)"),
    12: (
        "assistant",
        "The ERR_QUOTA_7731 failure means the build cache on ci-4 is full; pruning it fixed the build.",
    ),
    23: ("user", "Please keep the billing_v2.py module backwards compatible with the old invoice format."),
    31: ("assistant", "Migrated the invoices table with a nullable currency column so old rows still load."),
}
TOPICS = [
    "the login test that flakes on slow runners",
    "the Docker image size for the api service",
    "the retry policy of the payment webhook",
    "the README section on local setup",
    "the database index on orders.created_at",
    "the lint warnings in the worker module",
    "the timeout of the nightly export job",
    "the staging environment variables",
]


def conversation(n: int = 48) -> list[dict[str, str]]:
    """n turns of an agent at work (a request, then plans, tool runs and results), FACTS in place."""
    turns = []
    for i in range(n):
        topic = TOPICS[(i // 6) % len(TOPICS)]
        step = i % 6
        if i in FACTS:
            role, text = FACTS[i]
        elif step == 0:
            role, text = "user", f"Next, please look at {topic}."
        elif step in (2, 4):
            role, text = (
                "tool",
                f"$ make check  # {topic}\n{12 + i} passed, 0 failed in {3 + i % 5}.{i % 10}s",
            )
        else:
            role = "assistant"
            text = (
                f"Working on {topic}: I read the code, changed the configuration and reran the checks. "
                f"Commit {0xA100 + i:x} is pushed; the change is small and reversible."
            )
        turns.append({"role": role, "text": text})
    return turns


class Live:
    """The running instance plus the API calls the tests arrange data with."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.url = instance.url
        self._ids = itertools.count(1)

    def new_id(self, stem: str) -> str:
        return f"{stem}-{next(self._ids)}"

    def api(self, method: str, path: str, body: object | None = None) -> object:
        status, answer = self.instance.request(method, "/api/v1" + path, body)
        assert status < 300, (method, path, status, answer)
        return answer

    def make_session(
        self, sid: str, *, title: str, turns: list[dict[str, str]], x: int = 120, y: int = 420
    ) -> dict:
        self.api(
            "POST",
            "/sessions",
            {"id": sid, "title": title, "workspace": "~/src/shop", "x_budget": x, "y_budget": y},
        )
        for turn in turns:
            self.api("POST", f"/sessions/{sid}/items", turn)
        return self.api("GET", f"/sessions/{sid}")  # type: ignore[return-value]

    def export(self, sid: str) -> dict:
        return self.api("GET", f"/sessions/{sid}/export")  # type: ignore[return-value]

    def import_document(self, document: dict, sid: str) -> dict:
        status, answer = self.instance.request("POST", f"/api/v1/sessions/import?id={sid}", document)
        assert status == 201, answer
        return answer  # type: ignore[return-value]

    def unfinished_jobs(self, sid: str) -> int:
        # Straight from the instance's database (SQLite or PostgreSQL): the API has no per-session
        # job list, and this read never blocks the server.
        ((count,),) = self.instance.read(
            "SELECT count(*) FROM memory_job j JOIN memory_session s ON s.id = j.session_id "
            "WHERE s.sid = ? AND j.status IN ('queued', 'running')",
            sid,
        )
        return int(count)

    def wait_for_jobs(self, sid: str, timeout: float = 120) -> None:
        """Until the session has no unfinished job (an import queues a re-embedding)."""
        deadline = time.monotonic() + timeout
        while self.unfinished_jobs(sid):
            if time.monotonic() > deadline:
                raise AssertionError(f"jobs of {sid} did not finish in {timeout} s")
            time.sleep(0.2)

    def login_link(self, username: str) -> str:
        return self.instance.manage("login_link", username, "--quiet", "--base-url", self.url).strip()


# Package-scoped: the server, its worker and Chromium stop when the run leaves tests/browser, so no
# other test runs beside them (with Playwright's event loop left in the thread, Django refuses
# database calls as from an async context) nor shares the cores with them.
@pytest.fixture(scope="package")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    instance = Instance(tmp_path_factory.mktemp("browser"))
    try:
        instance.start_web()
        instance.start_worker()
        yield Live(instance)
    finally:
        instance.close()


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


class Watched:
    """A page with everything that would show a script ran: dialogs, console errors, a global."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        page.on("dialog", self._dialog)
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.accept_confirms = False

    def _dialog(self, dialog) -> None:  # type: ignore[no-untyped-def]
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        if dialog.type == "confirm" and self.accept_confirms:
            dialog.accept()
        else:
            dialog.dismiss()


@pytest.fixture
def watched(browser: Browser, live: Live) -> Iterator[Watched]:
    """A fresh browser context logged in as alice through a one-time link."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    context.set_default_timeout(20_000)
    page = context.new_page()
    watch = Watched(page)
    page.goto(live.login_link("alice"))
    page.get_by_role("button", name="Log in as alice").click()
    page.wait_for_url(f"{live.url}/**")
    yield watch
    context.close()


@pytest.fixture
def page(watched: Watched) -> Page:
    return watched.page


def shot(page: Page, name: str, *, full: bool = True) -> Path:
    """Save a screenshot of the current screen as artifacts/screenshots/<name>.png."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    return path


def read_download(download) -> dict:  # type: ignore[no-untyped-def]
    return json.loads(Path(download.path()).read_text(encoding="utf-8"))
