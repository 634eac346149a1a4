"""The session page: tiers picture, Summary / Compact / Reset tabs, Recall, jobs."""

from __future__ import annotations

import pytest

from memory import reads, services
from memory.models import Bullet, Item, Job, Session
from memory.recall import recall

from .conftest import conversation, say

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def hx(target: str) -> dict[str, str]:
    return {**HX, "HTTP_HX_TARGET": target}


def totals(sid: str = "deploys") -> Session:
    return Session.objects.with_totals().get(sid=sid)


def test_session_page_draws_the_tiers_against_their_budgets(alice_web, compacted):
    s = totals()
    tiers = reads.tiers(s)

    html = alice_web.get("/sessions/deploys/").content.decode()

    assert f'aria-label="X holds {s.x_tokens} of 60 tokens ({tiers.x_pct}%)"' in html
    assert (
        f'aria-label="Y holds {s.bullet_tokens} tokens of bullets and {s.y_raw_tokens} tokens of raw turns, '
        f'of 200 ({tiers.y_pct}%)"'
    ) in html
    assert f'<strong class="big-num">{s.generation}</strong> generations' in html
    # One dot per generation on the timeline, superseded generations included.
    assert html.count('class="dot"><title>Generation ') == s.generation


def test_session_page_without_memory_shows_empty_states(alice_web, alice):
    services.create_session(user=alice, sid="fresh", title="Fresh")

    html = alice_web.get("/sessions/fresh/").content.decode()

    assert "No summary yet." in html
    assert "0</strong> generations · no compaction yet" in html
    assert "Y raw: 0 older turns not yet summarised" in html


def test_summary_tab_lists_live_bullets_in_order_with_their_citations(alice_web, compacted):
    bullets = list(Bullet.objects.of_kind(compacted, "history").live().order_by("first_position", "id"))

    html = alice_web.get("/sessions/deploys/?tab=summary").content.decode()

    shown = [html.index(f'/sessions/deploys/bullets/{b.pk}/"') for b in bullets]
    assert shown == sorted(shown) and len(shown) == len(bullets) > 0
    assert "a person’s words, verbatim" in html  # the protected first turn


def test_bullet_expands_to_the_turns_its_hashes_cite(alice_web, compacted):
    bullet = Bullet.objects.of_kind(compacted, "history").live().order_by("first_position").first()
    cited = Item.objects.filter(session=compacted, chunk__hash__in=bullet.hash_refs).select_related("chunk")

    partial = alice_web.get(f"/sessions/deploys/bullets/{bullet.pk}/", **HX).content.decode()
    page = alice_web.get(f"/sessions/deploys/bullets/{bullet.pk}/").content.decode()

    assert partial.lstrip().startswith('<div class="cited-turns">')
    for item in cited:
        assert f'<span class="pos">#{item.position}</span>' in partial
        assert item.chunk.text in partial
    assert "A summary bullet and its turns" in page and "<html" in page


def test_bullet_of_another_session_is_404(alice_web, alice, compacted):
    other = services.create_session(user=alice, sid="other", x_budget=30, y_budget=60)
    say(other, *conversation(12))
    bullet = Bullet.objects.filter(session=other).first()

    assert alice_web.get(f"/sessions/deploys/bullets/{bullet.pk}/").status_code == 404


def test_tabs_render_only_the_panel_for_htmx(alice_web, compacted):
    html = alice_web.get("/sessions/deploys/?tab=compact", **hx("memory-tabs")).content.decode()

    assert html.lstrip().startswith('<div id="memory-tabs">')
    assert 'id="tab-compact" href="?tab=compact"' in html
    assert (
        html.count('aria-selected="true"') == 1
        and 'aria-selected="true" aria-controls="tab-panel">Compact</a>' in html
    )
    assert '<div id="tab-panel" role="tabpanel" aria-labelledby="tab-compact"' in html
    assert "What compaction will do" in html and "<html" not in html


def test_recall_keyword_highlights_the_hit_inside_its_neighbours(alice_web, compacted):
    html = alice_web.get(
        "/sessions/deploys/",
        {"q": "ERR_QUOTA_7731", "match": "keyword", "kind": "all"},
        **hx("recall-results"),
    ).content.decode()

    assert html.lstrip().startswith('<div id="recall-results"')
    assert '<li class="turn role-user hit">' in html
    assert "<mark>ERR_QUOTA_7731</mark> means the build cache is full." in html
    # The hit's neighbour (turn 1) is shown, not highlighted.
    assert '<li class="turn role-user">' in html or '<li class="turn role-assistant">' in html
    assert "Turn 1: we talked about the deploy pipeline, step 1." in html
    assert "1 passage</strong> for “ERR_QUOTA_7731”" in html
    assert "exact words" in html


def test_recall_semantic_groups_results_and_reports_tokens(alice_web, compacted):
    answer_html = alice_web.get(
        "/sessions/deploys/",
        {"q": "which day is deploying forbidden", "match": "semantic"},
        **hx("recall-results"),
    ).content.decode()

    assert 'Conversation <span class="count">' in answer_html
    assert " of 3,000 tokens used · by meaning" in answer_html


def test_recall_with_nothing_found_says_what_to_try(alice_web, compacted):
    html = alice_web.get(
        "/sessions/deploys/", {"q": "zzyzx-not-there", "match": "keyword"}, **hx("recall-results")
    ).content.decode()

    assert "Nothing found for “zzyzx-not-there”." in html
    assert "Exact words must appear in a turn; try <em>By meaning</em>." in html


@pytest.mark.parametrize("query", ["\u200b", "\ufeff \u2060", "\u00a0\u3000"])
def test_recall_of_only_invisible_characters_asks_for_words_instead_of_a_500(alice_web, compacted, query):
    for headers in (hx("recall-results"), {}):
        response = alice_web.get("/sessions/deploys/", {"q": query, "match": "keyword"}, **headers)

        assert response.status_code == 200
        assert '<p class="error" role="alert">Type something to search for.</p>' in response.content.decode()


def test_recall_longer_than_the_form_takes_says_so(alice_web, compacted):
    html = alice_web.get("/sessions/deploys/", {"q": "x" * 2001}, **hx("recall-results")).content.decode()

    assert "Search for at most 2000 characters (this is 2001)." in html


def test_compact_now_archives_x_and_y_into_a_new_generation(alice_web, compacted):
    before = totals()
    raw = before_raw(before)

    html = alice_web.post("/sessions/deploys/compact/", **hx("compact-preview"))
    after = totals()

    assert html["HX-Trigger-After-Swap"] == '{"session-changed": {}}'
    assert raw > 0
    assert f"Compacted: {raw} turns archived and summarised." in html.content.decode()
    assert (after.x_tokens, after.y_raw_tokens, after.generation) == (0, 0, before.generation + 1)


def before_raw(session: Session) -> int:
    return Item.objects.filter(session=session, kind="history", tier__in=("x", "y")).count()


def test_compact_without_javascript_redirects_back_with_the_result(alice_web, compacted):
    response = alice_web.post("/sessions/deploys/compact/", follow=True)

    assert response.redirect_chain == [("/sessions/deploys/?tab=compact", 302)]
    assert "Compacted: " in response.content.decode()


def test_compact_now_beyond_the_inline_bound_hands_it_to_the_worker_and_follows_the_job(
    alice_web, compacted, settings
):
    settings.OTTO_COMPACTION = "job"
    settings.OTTO_INLINE_COMPACT_TOKENS = 10
    before = totals()

    html = alice_web.post("/sessions/deploys/compact/", **hx("compact-preview")).content.decode()
    job = Job.objects.get(session=compacted, kind="compact")

    assert f"/jobs/{job.id}/" in html  # the job's progress panel, polling until done
    assert totals().generation == before.generation  # nothing was compacted in the request
    services.run_compaction_job(job_id=job.id, worker="test:1")
    after = totals()
    assert (after.x_tokens, after.y_raw_tokens, after.generation) == (0, 0, before.generation + 1)


def test_compact_tab_offers_the_due_compaction_as_a_job_when_y_is_over_budget(alice_web, alice, settings):
    settings.OTTO_COMPACTION = "job"
    session = services.create_session(user=alice, sid="due", x_budget=30, y_budget=60)
    say(
        session,
        *[("assistant", f"Assistant reply number {i} about the release checklist.") for i in range(12)],
    )
    assert services.queue_for(session).needs_compaction()

    tab = alice_web.get("/sessions/due/?tab=compact").content.decode()
    response = alice_web.post("/sessions/due/compact/", {"background": "1"}, **hx("compact-job"))

    assert "A compaction is due:" in tab
    job = Job.objects.get(session=session, kind="compact")
    html = response.content.decode()
    assert html.lstrip().startswith(f'<div id="job-{job.id}" class="job job-queued" data-status="queued"')
    assert f'hx-get="/jobs/{job.id}/" hx-trigger="every 500ms"' in html


def test_reset_asks_for_confirmation_listing_what_will_be_lost(alice_web, compacted):
    t = reads.tiers(totals())

    keep = alice_web.get(
        "/sessions/deploys/", {"tab": "reset", "mode": "summary"}, **hx("memory-tabs")
    ).content.decode()
    wipe = alice_web.get("/sessions/deploys/", {"tab": "reset", "mode": "all"}).content.decode()

    assert "Reset “Deploy rules” and keep its summary?" in keep
    kept = reads.cited_archived_turns(totals())
    assert 0 < kept <= t.archived_turns
    assert (
        f"<strong>{t.archived_turns - kept}</strong> archived turns the summary does not cite: "
        "Recall will no longer find them" in keep
    )
    assert (
        f"Kept: the {t.bullets} summary bullets and the {kept} archived turns they cite, so every "
        "bullet still opens onto its turns and Recall still finds them." in keep
    )
    assert "summary bullets and all" not in keep
    assert "Wipe everything in “Deploy rules”?" in wipe
    assert (
        f"<strong>{t.bullets}</strong> summary bullets and all {t.generation} generations (the count restarts at 0)"
        in wipe
    )
    assert Session.objects.get(sid="deploys").turns == 41  # looking is not resetting


def test_reset_summary_deletes_every_turn_but_those_its_kept_bullets_cite(alice_web, compacted):
    bullets = Bullet.objects.of_kind(compacted, "history").live().count()
    kept = reads.cited_archived_turns(compacted)

    response = alice_web.post("/sessions/deploys/reset/", {"mode": "summary"}, **hx("memory-tabs"))

    assert (
        "Reset: the conversation was cleared; the rolling summary was kept with the turns it cites."
        in response.content.decode()
    )
    assert response["HX-Trigger-After-Swap"] == '{"session-changed": {}}'
    assert (
        Item.objects.filter(session=compacted).count(),
        Item.objects.filter(session=compacted).exclude(tier="a").count(),
        Bullet.objects.of_kind(compacted, "history").live().count(),
    ) == (kept, 0, bullets)


def test_reset_all_deletes_the_summary_too(alice_web, compacted):
    response = alice_web.post("/sessions/deploys/reset/", {"mode": "all"}, follow=True)

    assert response.redirect_chain == [("/sessions/deploys/?tab=reset", 302)]
    assert "Reset: every turn and the whole summary were deleted." in response.content.decode()
    s = totals()
    assert (
        Item.objects.filter(session=s).count(),
        Bullet.objects.filter(session=s).count(),
        s.generation,
    ) == (0, 0, 0)


def test_reset_without_a_mode_is_refused(alice_web, compacted):
    response = alice_web.post("/sessions/deploys/reset/", {}, **hx("memory-tabs"))

    assert response.status_code == 422
    assert "Choose a reset mode." in response.content.decode()
    assert Item.objects.filter(session=compacted).count() == 41


def test_reembed_starts_a_job_and_shows_its_progress(alice_web, compacted):
    response = alice_web.post("/sessions/deploys/reembed/", **hx("jobs"))

    job = Job.objects.get(session=compacted, kind="reembed")
    html = response.content.decode()
    assert f'<div id="job-{job.id}" class="job job-queued"' in html
    assert "Re-embedding vectors" in html and "Waiting for the worker…" in html
    assert '<progress max="100" value="0"' in html


def test_job_poll_stops_with_286_when_the_job_is_done(alice_web, alice, compacted):
    Job.objects.create(
        id="j1", user=alice, session=compacted, kind="reembed", status="running", progress=20, total=41
    )

    running = alice_web.get("/jobs/j1/", **HX)
    Job.objects.filter(pk="j1").update(status="done", progress=41)
    done = alice_web.get("/jobs/j1/", **HX)

    assert running.status_code == 200 and '<progress max="100" value="49"' in running.content.decode()
    assert done.status_code == 286
    assert (
        '<progress max="100" value="100"' in done.content.decode()
        and "hx-trigger" not in done.content.decode()
    )
    assert done["HX-Trigger-After-Swap"] == '{"session-changed": {}}'


def test_failed_job_shows_its_error(alice_web, alice, compacted):
    Job.objects.create(
        id="j2",
        user=alice,
        session=compacted,
        kind="reembed",
        status="failed",
        error="EmbeddingUnavailable: no model",
    )

    response = alice_web.get("/jobs/j2/", **HX)

    assert response.status_code == 286
    assert '<p class="error" role="alert">EmbeddingUnavailable: no model</p>' in response.content.decode()


def test_job_page_without_javascript_refreshes_until_done(alice_web, alice, compacted):
    Job.objects.create(id="j3", user=alice, session=compacted, kind="compact", status="queued")

    html = alice_web.get("/jobs/j3/").content.decode()

    assert '<meta http-equiv="refresh" content="2">' in html and "Background compaction" in html


def test_recall_shows_five_passages_and_folds_the_rest_without_marking_words_by_meaning(alice_web, compacted):
    answer = recall(totals(), query="deploy pipeline step", match="semantic")
    passages = len(answer["results"]["history"])

    html = alice_web.get(
        "/sessions/deploys/", {"q": "deploy pipeline step", "match": "semantic"}, **hx("recall-results")
    ).content.decode()

    assert passages > 5
    assert f"<summary>Show {passages - 5} more passages</summary>" in html
    assert html.count('<article class="passage"') == passages
    assert "<mark>" not in html
