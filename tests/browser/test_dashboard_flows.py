"""Each dashboard flow, walked in Chromium against a live server and a real Celery worker."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from .conftest import FACTS, Live, Watched, conversation, read_download, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def open_session(page: Page, live: Live, sid: str) -> None:
    page.goto(f"{live.url}/sessions/{sid}/")
    expect(page.locator("nav.crumbs [aria-current=page]")).to_have_text(sid)


def test_login_page_and_one_time_link_log_a_new_user_in(browser, live: Live):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()

    page.goto(f"{live.url}/")
    expect(page).to_have_url(f"{live.url}/login/?next=/")
    expect(page.get_by_label("Username")).to_be_focused()
    shot(page, "01-login")
    page.goto(live.login_link("erin"))
    expect(page.get_by_text("This one-time link logs you in as erin.")).to_be_visible()
    shot(page, "02-login-link")
    page.get_by_role("button", name="Log in as erin").click()

    expect(page.get_by_role("heading", name="Account")).to_be_visible()
    expect(page.get_by_text("Welcome! Set a password below to log in again without a link.")).to_be_visible()
    page.get_by_label("Token name").fill("erin's laptop agent")
    page.get_by_role("button", name="Issue a token").click()
    token = page.locator("#new-token").input_value()
    assert token.startswith("otto_") and len(token) > 40
    shot(page, "03-account-tokens")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Sessions").click()
    expect(page.get_by_text("No sessions yet.")).to_be_visible()
    shot(page, "04-sessions-empty")
    context.close()


def test_import_a_session_file_and_open_it(page: Page, live: Live, tmp_path):
    source = live.new_id("source")
    summary = live.make_session(source, title="Checkout service refactor", turns=conversation())
    document = live.export(source)
    path = tmp_path / "checkout.json"
    path.write_text(json.dumps(document))
    target = live.new_id("imported")

    page.goto(f"{live.url}/")
    expect(page.get_by_role("link", name="Checkout service refactor")).to_be_visible()
    page.get_by_text("Import a session…").click()
    page.get_by_label("Session file (.json)").set_input_files(str(path))
    page.get_by_label("Session id (optional)").fill(target)
    shot(page, "05-import-form")
    page.get_by_role("button", name="Import", exact=True).click()

    expect(page).to_have_url(f"{live.url}/sessions/{target}/")
    expect(page.get_by_role("status").first).to_have_text(
        f"Imported session {target}. Its vectors are being written."
    )
    expect(page.get_by_role("heading", level=1)).to_have_text("Checkout service refactor")
    tiers = page.locator("#tiers")
    tokens = summary["tokens"]
    expect(
        tiers.get_by_role("img", name=re.compile(rf"^X holds {tokens['x']} of 120 tokens"))
    ).to_be_visible()
    expect(
        tiers.get_by_role(
            "img",
            name=re.compile(rf"^Y holds {tokens['bullets']} tokens of bullets and {tokens['y_raw']} tokens"),
        )
    ).to_be_visible()
    expect(tiers.locator("figcaption")).to_contain_text(f"{summary['generation']} generations")
    # The re-embedding the import queued runs in the worker; the page polls it to the end.
    expect(page.locator("#jobs .job")).to_have_attribute("data-status", "done", timeout=90_000)
    expect(page.locator("#jobs .pct")).to_have_text("100 %")
    shot(page, "06-session-summary")


def test_sessions_list_filters_as_you_type_and_shows_fill(page: Page, live: Live):
    tag = live.new_id("shop")
    made = [
        live.make_session(
            f"{tag}-payments", title=f"Payments webhook retries ({tag})", turns=conversation(30), x=200, y=900
        ),
        live.make_session(
            f"{tag}-login", title=f"Flaky login test ({tag})", turns=conversation(12), x=400, y=2000
        ),
        live.make_session(
            f"{tag}-docs", title=f"README and onboarding docs ({tag})", turns=conversation(6), x=300, y=1200
        ),
    ]
    page.goto(f"{live.url}/")
    for summary in made:
        row = page.locator("tr", has=page.get_by_role("link", name=summary["title"]))
        x = round(100 * summary["tokens"]["x"] / summary["x_budget"])
        expect(
            row.get_by_role(
                "img",
                name=re.compile(
                    rf"^X {x}% full \({summary['tokens']['x']} of {summary['x_budget']} tokens\)"
                ),
            )
        ).to_be_visible()
        expect(row.locator("td.num")).to_have_text(str(summary["turns"]))
    shot(page, "07-sessions-list")

    page.get_by_label("Search sessions").press_sequentially("flaky login")

    expect(page).to_have_url(f"{live.url}/?q=flaky%20login")
    expect(page.locator("#session-list tbody tr")).to_have_count(1)
    expect(page.locator("#session-list tbody tr").get_by_role("link")).to_have_text(
        f"Flaky login test ({tag})"
    )
    page.get_by_label("Search sessions").fill("no-such-session-anywhere")
    expect(page.get_by_text("No session matches “no-such-session-anywhere”.")).to_be_visible()


@pytest.fixture
def imported(live: Live) -> tuple[str, dict]:
    """A session made through the API, exported and imported again (vectors written by the worker)."""
    source = live.new_id("src")
    live.make_session(source, title="Checkout service refactor", turns=conversation())
    document = live.export(source)
    sid = live.new_id("copy")
    live.import_document(document, sid)
    live.wait_for_jobs(sid)
    return sid, document


def test_bullet_expands_to_the_turns_it_cites(page: Page, live: Live, imported):
    sid, document = imported
    texts = {c["hash"]: c["text"] for c in document["chunks"]} | {
        p["hash"]: p["text"] for p in document["pending"]
    }
    first = next(b for b in document["bullets"] if b["kind"] == "history" and not b["protected"])
    open_session(page, live, sid)

    bullet = page.locator("ol.bullets > li").filter(has_text=first["text"][:40]).first
    # Keyboard: focus the bullet and press Enter, as a person without a mouse would.
    bullet.locator("summary").focus()
    page.keyboard.press("Enter")

    turns = bullet.locator(".cited-turns .turn-text")
    expect(turns).to_have_count(len(set(first["hash_refs"])))
    expect(turns).to_have_text([texts[h] for h in dict.fromkeys(first["hash_refs"])])
    shot(page, "08-bullet-expanded")


def test_recall_in_both_modes_highlights_hits_among_neighbours(page: Page, live: Live, imported):
    sid, _ = imported
    open_session(page, live, sid)

    page.get_by_label("Search this session").fill("ERR_QUOTA_7731")
    page.get_by_label("Exact words").check()
    page.get_by_role("button", name="Recall").click()
    results = page.locator("#recall-results")
    expect(results.locator(".result-line")).to_contain_text("for “ERR_QUOTA_7731”")
    expect(results.locator(".result-line")).to_contain_text("exact words")
    hits = results.locator(".turn.hit")
    expect(hits.first.locator("mark")).to_have_text("ERR_QUOTA_7731")
    expect(results.locator(".turn.hit .turn-text")).to_have_text([FACTS[11][1], FACTS[12][1]])
    # Neighbours come with the hits, not highlighted.
    expect(results.locator(".passage .turn:not(.hit)").first).to_be_visible()
    used = int(
        re.search(r"([\d,]+) of 3,000 tokens used", results.locator(".result-line").inner_text())
        .group(1)
        .replace(",", "")
    )
    assert 0 < used <= 3000
    shot(page, "09-recall-keyword")
    page.evaluate("window.scrollTo(0, document.getElementById('tiers').offsetTop - 16)")
    shot(page, "09-recall-keyword-top", full=False)

    page.get_by_label("Search this session").fill("which day must we never deploy?")
    page.get_by_label("By meaning").check()
    page.get_by_role("button", name="Recall").click()
    expect(results.locator(".result-line")).to_contain_text("by meaning")
    expect(results.locator(".notice.warn")).to_have_count(0)  # not degraded: the vectors are there
    best = results.locator(".passage").first
    expect(best.locator(".turn.hit .turn-text").filter(has_text=FACTS[4][1])).to_have_count(1)
    expect(results.get_by_role("heading", name=re.compile("^Conversation"))).to_be_visible()
    shot(page, "10-recall-semantic")


def test_compact_runs_the_due_compaction_as_a_job_and_the_page_watches_it_finish(page: Page, live: Live):
    source = live.new_id("crowd-src")
    live.make_session(source, title="Crowded session", turns=conversation(), x=120, y=420)
    document = live.export(source)
    # The same memory under half the budget: imported, Y is over budget and a compaction is due.
    document["session"]["y_budget"] = 210
    sid = live.new_id("crowded")
    live.import_document(document, sid)
    live.wait_for_jobs(sid)
    open_session(page, live, sid)
    expect(page.locator("#tiers .legend").nth(1)).to_contain_text("over budget")

    page.get_by_role("tab", name="Compact").click()
    expect(page.get_by_role("heading", name="What compaction will do")).to_be_visible()
    expect(page.get_by_text("A compaction is due:")).to_be_visible()
    shot(page, "11-compact-tab")
    page.get_by_role("button", name="Run the due compaction in the background").click()

    job = page.locator("#compact-job .job")
    expect(job).to_be_visible()
    expect(job).to_have_attribute("data-status", "done", timeout=90_000)
    expect(job.locator(".job-detail")).to_contain_text("compaction round")
    expect(job.locator("progress")).to_have_attribute("value", "100")
    # The finished job tells the page; the tiers picture and the preview reload themselves.
    expect(page.get_by_text("A compaction is due:")).to_have_count(0)
    expect(page.locator("#tiers .legend").nth(1)).not_to_contain_text("over budget")
    after = live.api("GET", f"/sessions/{sid}")
    assert after["generation"] > document["session"]["generation"]
    expect(page.locator("#tiers figcaption")).to_contain_text(f"{after['generation']} generations")
    shot(page, "12-compact-job-done")

    page.get_by_role("button", name="Compact now").click()
    expect(page.locator("#compact-preview .notice.success")).to_have_text(
        re.compile(r"^Compacted: \d+ turns? archived and summarised\.$")
    )
    expect(page.locator("#tiers figcaption")).to_contain_text(f"{after['generation'] + 1} generations")


@pytest.mark.parametrize("mode", ["summary", "all"])
def test_reset_each_mode_confirms_what_will_be_lost_then_clears_it(page: Page, live: Live, mode: str):
    sid = live.new_id(f"reset-{mode}")
    before = live.make_session(sid, title=f"Reset me ({mode})", turns=conversation(40))
    bullets = len(live.api("GET", f"/sessions/{sid}/context")["bullets"])
    open_session(page, live, sid)

    page.get_by_role("tab", name="Reset").click()
    page.get_by_label("Keep the summary" if mode == "summary" else "Wipe everything").check()
    page.get_by_role("button", name="Review what will be lost…").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text("This cannot be undone. It permanently deletes:")
    expect(confirm.locator("ul.losses li").first).to_contain_text("recent turn")
    if mode == "summary":
        expect(confirm).to_contain_text(f"Kept: the {bullets} summary bullets and the ")
    else:
        expect(confirm).to_contain_text(
            f"{bullets} summary bullets and all {before['generation']} generations"
        )
    shot(page, f"13-reset-confirm-{mode}")
    page.get_by_role(
        "button", name="Delete every turn, keep the summary" if mode == "summary" else "Wipe everything"
    ).click()

    expect(page.locator("#tab-panel .notice.success")).to_have_text(
        "Reset: the conversation was cleared; the rolling summary was kept with the turns it cites."
        if mode == "summary"
        else "Reset: every turn and the whole summary were deleted."
    )
    expect(page.locator("#tiers").get_by_role("img", name=re.compile(r"^X holds 0 of"))).to_be_visible()
    # Turns and tool outputs: all gone; archived turns: only those the kept summary cites; the
    # embedding model stays.
    archived = re.compile(r"^[1-9][0-9]*$") if mode == "summary" else "0"
    expect(page.locator("#tiers .stats dd")).to_have_text(["0", archived, "0", re.compile(r"MiniLM")])
    after = live.api("GET", f"/sessions/{sid}/context")
    assert (len(after["x"]), len(after["y_raw"]), len(after["bullets"])) == (
        0,
        0,
        bullets if mode == "summary" else 0,
    )
    shot(page, f"14-reset-done-{mode}")
    page.get_by_role("tab", name="Summary").click()
    if mode == "summary":
        expect(page.locator("ol.bullets > li")).to_have_count(bullets)
    else:
        expect(page.get_by_text("No summary yet.")).to_be_visible()


def test_reembed_progress_bar_reaches_100_percent(page: Page, live: Live, imported):
    sid, document = imported
    items = len(document["pending"]) + len(document["archive"])
    open_session(page, live, sid)

    page.get_by_role("button", name="Re-embed").click()
    job = page.locator("#jobs .job")
    expect(job).to_be_visible()
    seen = set()
    for _ in range(400):
        seen.add(job.get_attribute("data-status"))
        if "done" in seen:
            break
        page.wait_for_timeout(50)

    expect(job).to_have_attribute("data-status", "done")
    expect(job.locator("progress")).to_have_attribute("value", "100")
    expect(job.locator(".pct")).to_have_text("100 %")
    expect(job.locator(".job-detail")).to_contain_text(f"{items} of {items} turns embedded")
    assert seen & {"queued", "running"}, seen  # the bar was polled while the job ran
    shot(page, "15-reembed-done")


def test_lesson_fix_edited_inline_is_kept_after_reload(page: Page, live: Live):
    tool = live.new_id("pytest")
    for other in (
        {
            "tool": "docker",
            "error": "failed to solve: no space left on device",
            "action": "docker builder prune -af",
        },
        {
            "tool": "git",
            "error": "fatal: refusing to merge unrelated histories",
            "action": "git pull --rebase origin main",
        },
    ):
        live.api("POST", "/lessons/errors", {**other, "outcome": "resolved"})
    record = live.api(
        "POST",
        "/lessons/errors",
        {
            "tool": tool,
            "error": "ModuleNotFoundError: No module named 'billing_v2'\n  File \"tests/test_invoices.py\", line 3",
            "action": "pip install -e .",
            "outcome": "resolved",
            "context": "running the suite from a fresh clone",
        },
    )
    page.goto(f"{live.url}/lessons/")
    card = page.locator(f"#lesson-{record['id']}")
    expect(card.locator(".meta")).to_contain_text("expires in 90 days · 0 hits")
    shot(page, "16-lessons")

    card.get_by_role("link", name=f"Edit fix for {tool}").click()
    editor = page.get_by_label("Fix", exact=True)
    expect(editor).to_be_focused()
    editor.fill("pip install -e '.[test]' and run pytest from the repository root")
    shot(page, "17-lesson-edit")
    page.get_by_role("button", name="Save fix").click()
    expect(card.locator(".fix")).to_have_text(
        "pip install -e '.[test]' and run pytest from the repository root"
    )
    expect(card.get_by_text("Saved. The expiry date is unchanged.")).to_be_visible()

    page.reload()
    expect(page.locator(f"#lesson-{record['id']} .fix")).to_have_text(
        "pip install -e '.[test]' and run pytest from the repository root"
    )
    expect(page.locator(f"#lesson-{record['id']} .meta")).to_contain_text("expires in 90 days")
    listed = live.api("GET", f"/lessons/errors?tool={tool}")["items"][0]
    assert (listed["action"], listed["expires_at"]) == (
        "pip install -e '.[test]' and run pytest from the repository root",
        record["expires_at"],
    )


def test_lesson_delete_asks_then_removes_it(watched: Watched, live: Live):
    page = watched.page
    tool = live.new_id("npm")
    record = live.api(
        "POST",
        "/lessons/errors",
        {"tool": tool, "error": "EACCES: permission denied", "action": "npm ci", "outcome": "resolved"},
    )
    page.goto(f"{live.url}/lessons/?tool={tool}")
    watched.accept_confirms = True

    page.locator(f"#lesson-{record['id']}").get_by_role(
        "button", name=f"Delete the lesson for {tool}"
    ).click()

    expect(page.locator(f"#lesson-{record['id']}")).to_have_text(f"Deleted the lesson for {tool}.")
    assert watched.dialogs == ["confirm: Delete this lesson? Agents will no longer be offered its fix."]
    assert live.api("GET", f"/lessons/errors?tool={tool}")["count"] == 0


def test_export_downloads_the_same_document(page: Page, live: Live, imported):
    sid, document = imported
    open_session(page, live, sid)

    with page.expect_download() as info:
        page.get_by_role("link", name="Export JSON").click()
    download = info.value
    exported = read_download(download)

    assert download.suggested_filename == f"ottoweb-{sid}.json"
    assert {k: v for k, v in exported.items() if k != "session"} == {
        k: v for k, v in document.items() if k != "session"
    }
    same = ("title", "workspace", "x_budget", "y_budget", "turns", "generation", "generations")
    assert {k: exported["session"][k] for k in same} == {k: document["session"][k] for k in same}
    assert exported["session"]["id"] == sid


def test_delete_session_confirms_then_returns_to_the_list(page: Page, live: Live):
    sid = live.new_id("doomed")
    live.make_session(sid, title="Throwaway experiment", turns=conversation(12))
    open_session(page, live, sid)

    page.get_by_role("link", name="Delete…").click()
    expect(page.get_by_role("heading", name="Delete “Throwaway experiment”?")).to_be_visible()
    shot(page, "18-delete-confirm")
    page.get_by_role("button", name="Delete this session").click()

    expect(page).to_have_url(f"{live.url}/")
    expect(page.get_by_role("status").first).to_have_text(f"Deleted session {sid} and everything in it.")
    status, _ = live.instance.request("GET", f"/api/v1/sessions/{sid}")
    assert status == 404
