"""A refusal the server explains reaches the person in its words, in Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.live import Instance

from .conftest import Live, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def capped(tmp_path) -> Iterator[Live]:
    """An instance allowing one queued job per user and running no worker: a job stays queued."""
    instance = Instance(tmp_path, OTTO_MAX_QUEUED_JOBS="1")
    try:
        instance.start_web()
        yield Live(instance)
    finally:
        instance.close()


def test_a_reembed_past_the_job_cap_says_why_not_that_the_server_failed(browser: Browser, capped: Live):
    for sid in ("first", "second"):
        capped.api("POST", "/sessions", {"id": sid})
        capped.api("POST", f"/sessions/{sid}/items", {"role": "user", "text": f"The {sid} session."})
    capped.api("POST", "/sessions/first/reembed", {})  # the one job alice may have waiting
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(capped.login_link("alice"))
    page.get_by_role("button", name="Log in as alice").click()
    page.wait_for_url(f"{capped.url}/**")

    page.goto(f"{capped.url}/sessions/second/")
    page.get_by_role("button", name="Re-embed").click()

    # It said "Something went wrong on the server (429). Please try again."
    expect(page.locator("#flash [role=alert]")).to_have_text(
        "Not done (429): 1 of your jobs are waiting for the worker (the limit is 1); "
        "try again once some have run"
    )
    shot(page, "reembed-refused")
    context.close()
