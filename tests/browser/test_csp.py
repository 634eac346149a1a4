"""The Content-Security-Policy (ottoweb/security.py): every dashboard page passes it in Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from .conftest import Live, conversation

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Chromium reports each blocked script, style or request twice: on the console, and as a
# securitypolicyviolation event, which this records in the page (init scripts are not subject to CSP).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Recorder:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.console: list[str] = []
        self.events: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.console.append(f"pageerror: {exc}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type in ("error", "warning") or "Content Security Policy" in message.text:
            self.console.append(f"{message.type}: {message.text} ({message.location.get('url')})")

    def visit(self, url: str) -> None:
        self.collect()
        response = self.page.goto(url)
        assert response is not None and response.status == 200, (url, response and response.status)
        assert "default-src 'self'" in response.headers["content-security-policy"]

    def collect(self) -> None:
        """The current page's violation events (before it is left)."""
        try:
            self.events += self.page.evaluate("window.__csp || []")
        except Exception:  # no page loaded yet
            pass


def test_every_dashboard_page_passes_the_content_security_policy(browser: Browser, live: Live):
    sid = live.new_id("csp")
    live.make_session(sid, title="CSP walk", turns=conversation(24), x=60, y=200)
    live.api(
        "POST", f"/sessions/{sid}/items", {"role": "tool", "kind": "context", "text": "df: /var 97% full"}
    )
    job = live.api("POST", f"/sessions/{sid}/reembed")["job_id"]  # type: ignore[index]
    live.api(
        "POST",
        "/lessons/errors",
        {
            "tool": "bash",
            "error": "npm ERR! ENOSPC",
            "action": "emptied the npm cache",
            "outcome": "resolved",
        },
    )
    live.api("POST", "/memory/remember", {"appName": "crm", "domain": "acme.com", "content": "prefers email"})
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    seen = Recorder(page)

    seen.visit(f"{live.url}/login/")
    expect(page.get_by_label("Username")).to_be_focused()
    page.goto(live.login_link("alice"))
    page.get_by_role("button", name="Log in as alice").click()
    page.wait_for_url(f"{live.url}/**")

    seen.visit(f"{live.url}/")
    page.get_by_label("Search sessions").fill("CSP walk")  # htmx: the list is swapped in
    expect(page.get_by_role("link", name="CSP walk")).to_be_visible()
    seen.visit(f"{live.url}/sessions/{sid}/")
    page.get_by_label("Search this session").fill("ERR_QUOTA_7731")
    page.get_by_role("button", name="Recall").click()  # htmx: results swapped in
    expect(page.locator("#recall-results")).to_contain_text("ERR_QUOTA_7731")
    seen.visit(f"{live.url}/jobs/{job}/")  # htmx polls until the job is done
    expect(page.locator(f"#job-{job}")).to_have_attribute("data-status", "done")
    seen.visit(f"{live.url}/lessons/")
    page.get_by_label("Search errors and fixes").fill("ENOSPC")
    expect(page.get_by_text("emptied the npm cache")).to_be_visible()
    seen.visit(f"{live.url}/notes/")
    expect(page.get_by_text("prefers email")).to_be_visible()
    seen.visit(f"{live.url}/account/")
    seen.visit(f"{live.url}/audit/")
    seen.visit(f"{live.url}/api/v1/docs")
    expect(page.get_by_text("ottoweb").first).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()  # Swagger UI rendered the operations
    seen.collect()
    context.close()

    assert (seen.console, seen.events) == ([], [])
