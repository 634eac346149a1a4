from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from memory import services
from memory.engine import tokens
from memory.engine.embeddings import WordLlamaBackend
from memory.models import Bullet, ItemVector, Session
from memory.services import NewItem
from tests.memory.engine.conftest import synthetic_turns

pytestmark = pytest.mark.django_db

FACT = "My sister Jenna moved to Reykjavik last spring to study volcanology at the university."


def fill(session, turns):
    for role, text in turns:
        services.append_items(session=session, items=[NewItem(role=role, text=text)])


def recall(api, sid, **body):
    response = api.post(f"/api/v1/sessions/{sid}/recall", body)
    assert response.status_code == 200, response.content
    return response.json()


def hits(answer, kind="history"):
    """The texts of the turns that matched, best passage first."""
    return [t["text"] for p in answer["results"][kind] for t in p["turns"] if t["hit"]]


def top_texts(answer, kind="history"):
    return [t["text"] for t in answer["results"][kind][0]["turns"]] if answer["results"][kind] else []


def test_keyword_match_finds_only_the_exact_token_where_semantic_search_returns_paraphrases(alice, alice_api):
    session = services.create_session(user=alice, sid="kw", x_budget=200, y_budget=600)
    turns = synthetic_turns(200, seed=5)
    planted = "The nightly job died again, see ERR_QUOTA_7731 in billing_v2.py for details."
    turns.insert(120, ("tool", planted))
    turns[60:60] = [
        ("assistant", f"The nightly job died again because the quota ran out on shard {n}.") for n in range(8)
    ]
    fill(session, turns)

    keyword = recall(alice_api, "kw", query="ERR_QUOTA_7731", match="keyword")
    semantic = recall(alice_api, "kw", query="ERR_QUOTA_7731", match="semantic", kind="history")
    file_name = recall(alice_api, "kw", query="billing_v2.py", match="keyword")

    assert [t["text"] for t in keyword["results"]["history"][0]["turns"] if t["hit"]] == [planted]
    assert [t["text"] for t in file_name["results"]["history"][0]["turns"] if t["hit"]] == [planted]
    assert len(keyword["results"]["history"]) == 1
    semantic_hits = [t["text"] for p in semantic["results"]["history"] for t in p["turns"] if t["hit"]]
    assert sum("ERR_QUOTA_7731" not in text for text in semantic_hits) >= 8


def test_keyword_match_falls_back_to_a_substring_inside_a_token(alice, alice_api):
    session = services.create_session(user=alice, sid="sub")
    fill(session, [("tool", "failed with ERR_QUOTA_7731"), ("assistant", "retrying now")])

    answer = recall(alice_api, "sub", query="QUOTA_77", match="keyword")

    assert [t["text"] for t in answer["results"]["history"][0]["turns"] if t["hit"]] == [
        "failed with ERR_QUOTA_7731"
    ]


def test_context_items_are_searched_and_reported_under_their_own_heading(alice, alice_api):
    session = services.create_session(user=alice, sid="ctx")
    fill(session, [("user", "please check the disk"), ("assistant", "checking the disk now")])
    services.append_items(
        session=session,
        items=[NewItem(role="tool", text="df: /var is 97% full (ENOSPC soon)", kind="context")],
    )

    answer = recall(alice_api, "ctx", query="how full is /var?")
    history_only = recall(alice_api, "ctx", query="how full is /var?", kind="history")

    assert top_texts(answer, "context") == ["df: /var is 97% full (ENOSPC soon)"]
    assert all("df:" not in t["text"] for p in answer["results"]["history"] for t in p["turns"])
    assert history_only["results"]["context"] == []


def test_mixed_embedding_stamps_refuse_to_rank_until_reembedded(alice, alice_api):
    session = services.create_session(user=alice, sid="mixed", x_budget=100, y_budget=300)
    fill(session, synthetic_turns(40, seed=2))
    recall(alice_api, "mixed", query="pottery class")  # writes MiniLM vectors
    Session.objects.filter(pk=session.pk).update(embedding_model=WordLlamaBackend.name)
    session.refresh_from_db()
    fill(session, [("user", FACT), ("assistant", "That sounds exciting.")])
    services.embed_items(session=session, kind="history")

    refused = recall(alice_api, "mixed", query="Which city did Jenna move to?")
    services.reembed_session(session=session)
    ranked = recall(alice_api, "mixed", query="Which city did Jenna move to?")

    assert set(ItemVector.objects.filter(session=session).values_list("model", flat=True)) == {
        "fastembed:sentence-transformers/all-MiniLM-L6-v2@int8"
    }
    assert "ranking across embedding models is refused" in refused["degraded"]
    assert "/reembed" in refused["degraded"]
    assert refused["results"]["history"], "the degraded path still answers"
    assert ranked["degraded"] is None
    assert FACT in [t["text"] for t in ranked["results"]["history"][0]["turns"] if t["hit"]]


def test_a_vector_writer_holding_the_old_model_writes_nothing_after_a_reembed_restamps(alice):
    """A worker that loaded the session before a reembed must not slip old vectors in after it."""
    session = services.create_session(user=alice, sid="race", x_budget=100, y_budget=300)
    fill(session, synthetic_turns(12, seed=3))
    stale = Session.objects.get(pk=session.pk)  # what the worker read before the reembed committed
    Session.objects.filter(pk=session.pk).update(embedding_model=WordLlamaBackend.name)

    written = services.embed_items(session=stale, kind="history")

    assert (written, ItemVector.objects.filter(session=session).count()) == (0, 0)


def test_reembed_progress_counts_on_across_kinds(alice):
    session = services.create_session(user=alice, sid="kinds", x_budget=100, y_budget=300)
    fill(session, synthetic_turns(10, seed=4))
    services.append_items(
        session=session, items=[NewItem(role="tool", kind="context", text=f"ls: {n} files") for n in range(3)]
    )
    seen: list[int] = []

    written = services.reembed_session(session=session, progress=seen.append)

    assert written == 13 and seen[-1] == 13 and seen == sorted(seen)


def test_unavailable_model_degrades_recall_and_never_fails_an_append(alice, alice_api, settings):
    from memory.engine import embeddings
    from memory.models import Setting

    session = services.create_session(user=alice, sid="nomodel", x_budget=100, y_budget=300)
    Setting.objects.filter(key="embedding_model").update(value="fastembed:BAAI/bge-small-en-v1.5")
    Session.objects.filter(pk=session.pk).update(embedding_model="fastembed:BAAI/bge-small-en-v1.5")
    embeddings._cache.clear()

    for n in range(30):
        assert (
            alice_api.post(
                "/api/v1/sessions/nomodel/items",
                {"role": "assistant", "text": f"step {n}: Reykjavik trip planning"},
            ).status_code
            == 201
        )
    answer = recall(alice_api, "nomodel", query="Reykjavik trip")

    assert answer["degraded"].startswith("embedding model unavailable")
    assert "ranked by keywords only" in answer["degraded"]
    assert answer["results"]["history"]


def test_token_budget_holds_for_every_query_in_a_sweep(alice, alice_api):
    session = services.create_session(user=alice, sid="sweep", x_budget=200, y_budget=600)
    turns = synthetic_turns(150, seed=9)
    turns.append(("tool", "A very long tool output line. " * 400))
    fill(session, turns)
    rng = random.Random(4)
    words = "deploy pottery Lisbon Postgres invoice puppy budget sourdough Redis guitar marathon tool output".split()

    for n in range(200):
        query = " ".join(rng.sample(words, rng.randint(1, 4)))
        budget = rng.choice([1, 5, 20, 60, 200, 800, 3000])
        body = {"query": query, "max_tokens": budget, "match": rng.choice(["semantic", "keyword"])}
        answer = recall(alice_api, "sweep", **body)
        returned = sum(
            tokens.count_tokens(t["text"])
            for k in ("history", "context")
            for p in answer["results"][k]
            for t in p["turns"]
        )
        returned += sum(tokens.count_tokens(b["text"]) for b in answer["bullets"])
        assert answer["tokens"] == returned, (n, body)
        assert answer["tokens"] <= budget, (n, body)


def test_a_turn_longer_than_the_budget_is_cut_and_marked(alice, alice_api):
    session = services.create_session(user=alice, sid="cut")
    fill(session, [("tool", "volcano eruption log line. " * 300)])

    answer = recall(alice_api, "cut", query="volcano eruption", max_tokens=50)

    turn = answer["results"]["history"][0]["turns"][0]
    assert turn["truncated"] is True
    assert answer["tokens"] <= 50
    assert ("volcano eruption log line. " * 300).startswith(turn["text"])


def test_recall_of_another_users_session_is_404(alice, bob_api):
    services.create_session(user=alice, sid="private")

    response = bob_api.post("/api/v1/sessions/private/recall", {"query": "anything"})

    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("query", ["  ", "\u200b", "\ufeff\u2060"])
def test_recall_refuses_an_empty_query(alice, alice_api, query):
    services.create_session(user=alice, sid="q")

    response = alice_api.post("/api/v1/sessions/q/recall", {"query": query})

    assert (response.status_code, response.json()["detail"]) == (422, "query must not be empty")


def test_a_changed_model_setting_keeps_the_recorded_model_and_the_check_says_so(alice, settings):
    from memory.checks import embedding_model_recorded
    from memory.services.embedding import database_model

    services.create_session(user=alice, sid="first")
    settings.OTTO_EMBEDDING_MODEL = "wordllama"

    warnings = embedding_model_recorded(None)

    assert database_model() == "minilm"
    assert (
        services.create_session(user=alice, sid="second").embedding_model
        == "fastembed:sentence-transformers/all-MiniLM-L6-v2@int8"
    )
    assert [w.id for w in warnings] == ["memory.W001"]
    assert "manage.py reembed --all --model wordllama" in warnings[0].msg


def test_in_job_mode_a_recall_stores_no_vector_and_still_finds_the_rest(alice, alice_api, settings):
    """The worker writes vectors for new turns; a read writes nothing, not even a straggler's."""
    settings.OTTO_COMPACTION = "job"
    session = services.create_session(user=alice, sid="backlog")
    turns = synthetic_turns(40, seed=3)
    turns.append(("user", FACT))
    fill(session, turns)
    assert not ItemVector.objects.filter(session=session).exists()

    answer = recall(alice_api, "backlog", query="Where did Jenna move to study volcanoes?")

    assert not ItemVector.objects.filter(session=session).exists()
    assert FACT in hits(answer)
    assert answer["degraded"] is None


def test_a_straggler_the_worker_has_not_embedded_yet_is_ranked_by_meaning(alice, alice_api, settings):
    """The newest turns without a stored vector are embedded for the recall alone: a question that
    shares no word with the newest turn still finds it first."""
    settings.OTTO_COMPACTION = "job"
    session = services.create_session(user=alice, sid="straggler")
    fill(session, [*synthetic_turns(40, seed=3), ("user", FACT)])

    # Expansion off: its related words would find the turn by keywords, and the point is its vector.
    answer = recall(
        alice_api,
        "straggler",
        query="Which Icelandic city does my sibling live in nowadays?",
        rules_off=["expansion"],
    )

    assert FACT in hits(answer)[:2]
    assert not ItemVector.objects.filter(session=session).exists()


def documents_embedded(monkeypatch) -> list[str]:
    """Every text the sessions' own (real) model embeds as a document from now on."""
    real = services.embedding.session_embedder
    embedded: list[str] = []

    class Counting:
        def __init__(self, inner):
            self.inner, self.name, self.dim = inner, inner.name, inner.dim

        def embed_documents(self, texts):
            embedded.extend(texts)
            return self.inner.embed_documents(texts)

        def __getattr__(self, attribute):
            return getattr(self.inner, attribute)

    monkeypatch.setattr(services.embedding, "session_embedder", lambda s: Counting(real(s)))
    return embedded


def test_a_recall_before_the_stragglers_are_stored_reuses_what_the_last_one_embedded(
    alice, alice_api, settings, monkeypatch
):
    """A recall embeds the newest vector-less turns for itself; the next one, before the worker has
    stored them, embeds none of them again and answers the same."""
    settings.OTTO_COMPACTION = "job"
    session = services.create_session(user=alice, sid="twice")
    fill(session, [*synthetic_turns(30, seed=23), ("user", FACT + " (twice)")])
    embedded = documents_embedded(monkeypatch)
    question = "Which Icelandic city does my sibling live in nowadays?"

    first = recall(alice_api, "twice", query=question)
    after_first = len(embedded)
    second = recall(alice_api, "twice", query=question)

    assert after_first == services.RECALL_EMBED_LIMIT
    assert len(embedded) == after_first
    assert second["results"] == first["results"]
    assert not ItemVector.objects.filter(session=session).exists()


def test_inline_appends_store_vectors_a_batch_at_a_time_so_no_more_wait_than_a_recall_embeds(alice):
    """With no worker the append writes the vectors, RECALL_EMBED_LIMIT turns per model call."""
    session = services.create_session(user=alice, sid="inline", x_budget=100_000, y_budget=100_000)
    stored = []
    for role, text in synthetic_turns(3 * services.RECALL_EMBED_LIMIT + 5, seed=3):
        services.append_items(session=session, items=[NewItem(role=role, text=text)])
        stored.append(ItemVector.objects.filter(session=session).count())

    limit = services.RECALL_EMBED_LIMIT
    assert stored[limit - 2] == 0  # one model call a batch, not one a turn
    assert stored[limit - 1] == limit
    assert stored[-1] == 3 * limit
    assert all(appended - n < limit for appended, n in enumerate(stored, start=1))


def test_an_inline_append_stores_what_a_recall_embedded_for_itself_without_embedding_it_again(
    alice, alice_api, monkeypatch
):
    session = services.create_session(user=alice, sid="handover", x_budget=100_000, y_budget=100_000)
    limit = services.RECALL_EMBED_LIMIT
    fill(session, synthetic_turns(limit - 1, seed=29))  # one short of a batch: nothing stored yet
    real = services.embedding.session_embedder
    embedded = documents_embedded(monkeypatch)
    recall(alice_api, "handover", query="when is the pottery class?")
    assert len(embedded) == limit - 1 and not ItemVector.objects.filter(session=session).exists()

    fill(session, [("user", "The handover note: pottery moved to Thursdays.")])

    assert len(embedded) == limit  # the batch store embedded the new turn only
    stored = ItemVector.objects.filter(session=session).order_by("item__position")
    assert stored.count() == limit
    again = real(session).embed_documents(embedded[:1])[0]
    assert np.allclose(np.frombuffer(stored[0].vector, dtype=np.float32), again, atol=1e-5)


def test_an_inline_append_whose_vectors_failed_is_made_up_by_the_next(alice, monkeypatch):
    from memory.engine.embeddings import EmbeddingUnavailable

    session = services.create_session(user=alice, sid="retry", x_budget=100_000, y_budget=100_000)
    limit = services.RECALL_EMBED_LIMIT
    real = services.embedding.session_embedder

    def no_model(session):
        raise EmbeddingUnavailable("the model folder is gone")

    monkeypatch.setattr(services.embedding, "session_embedder", no_model)
    fill(session, synthetic_turns(limit + 3, seed=5))
    assert not ItemVector.objects.filter(session=session).exists()

    monkeypatch.setattr(services.embedding, "session_embedder", real)
    fill(session, [("user", FACT)])

    assert ItemVector.objects.filter(session=session).count() == limit + 4


def test_after_a_reset_the_next_generation_s_bullets_are_cited_not_a_cached_index_of_the_old_ones(
    alice, alice_api
):
    """A reset starts the generation count again; recall's per-generation index must not survive it."""
    session = services.create_session(user=alice, sid="again", x_budget=60, y_budget=200)

    def compacted_once(label):
        turns = [("assistant", f"{label} run {n}: the {label} cache warmed shard {n}.") for n in range(30)]
        fill(session, turns)
        assert session.tier_states.get(kind="history").generation >= 1
        return recall(alice_api, "again", query=f"{label} cache shard 3")

    before = compacted_once("alpha")
    assert before["bullets"]
    services.reset_session(session=session, mode="all")
    after = compacted_once("beta")

    live = set(Bullet.objects.filter(session=session, superseded=False).values_list("pk", flat=True))
    assert after["bullets"] and {b["id"] for b in after["bullets"]} <= live
    assert all("beta" in b["text"] for b in after["bullets"])


def _dated_session(alice):
    from datetime import UTC, datetime

    session = services.create_session(user=alice, sid="dated", x_budget=100_000, y_budget=100_000)
    said = {
        # The better keyword and meaning match, in March...
        10: (datetime(2022, 3, 14, 15, 0, tzinfo=UTC), "I baked a chocolate cake, baking cakes is my thing"),
        # ... and the turn of the month the question names, apart from it (one passage each).
        40: (datetime(2022, 11, 9, 15, 0, tzinfo=UTC), "Made a lemon tart with the new oven this week"),
    }
    for n, (role, text) in enumerate(synthetic_turns(60, seed=5)):
        when, name = datetime(2022, 1 + n % 12, 2, 10, 0, tzinfo=UTC), "Joanna"
        if n in said:
            (when, text), name = said[n], "Nate"
        services.append_items(
            session=session, items=[NewItem(role=role, text=text, name=name, occurred_at=when)]
        )
    return session


def test_a_turn_of_the_month_the_question_names_ranks_higher(alice):
    from memory import recall as recall_module

    session = _dated_session(alice)
    query = "What cake did Nate bake in November 2022?"

    def first_hit(rules_off=()):
        answer = recall_module.recall(
            session, query=query, kind="history", max_tokens=3000, rules_off=rules_off
        )
        return answer["results"]["history"][0]["turns"][0]["text"]

    assert first_hit().startswith("Made a lemon tart")
    # Without the boost the March turn wins: the date among the indexed words is not enough.
    assert first_hit(["time_boost"]).startswith("I baked a chocolate cake")


LOCOMO_DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo10_dev.json"


def _first_sittings_of_conv_26(alice, sittings):
    """Real LoCoMo turns (conv-26, its first sittings), each with its speaker and time."""
    from memory.evaluation import locomo

    conv = locomo.load(json.loads(LOCOMO_DEV.read_text()))[0]
    session = services.create_session(user=alice, sid="conv-26", x_budget=100_000, y_budget=100_000)
    position_of = {}
    for turn in conv.turns:
        if int(turn.dia_id[1:].split(":")[0]) > sittings:
            break
        item = NewItem(role="user", text=turn.text, name=turn.speaker, occurred_at=turn.occurred_at)
        position_of[turn.dia_id] = services.append_items(session=session, items=[item])[0].position
    services.embed_items(session=session, kind="history")
    return session, position_of


@pytest.mark.slow
def test_a_question_naming_one_speaker_is_also_asked_in_their_own_words(alice):
    """Melanie speaks of herself as "I"; "What does Melanie do…" finds, by meaning, the turns said
    to her first. Asked also as "What do I do…", her own answers come back."""
    from memory import recall as recall_module

    session, position_of = _first_sittings_of_conv_26(alice, 8)
    asked = {
        # Question → its evidence (LoCoMo's), said by the speaker the question names.
        "What does Melanie do to destress?": ["D7:22", "D5:4"],
        "Where has Melanie camped?": ["D6:16", "D4:6", "D8:32"],
        "What is Caroline's relationship status?": ["D3:13", "D2:14"],
    }

    def passage_ranks(rules_off):
        """Each evidence turn's passage rank (0 best), in question order; None when not returned."""
        ranks = []
        for question, evidence in asked.items():
            answer = recall_module.recall(
                session, query=question, kind="history", max_tokens=3000, rules_off=rules_off
            )
            rank_of = {
                t["position"]: i
                for i, p in enumerate(answer["results"]["history"])
                for t in p["turns"]
                if t["hit"]
            }
            ranks.extend(rank_of.get(position_of[e]) for e in evidence)
        return ranks

    with_own_words = passage_ranks(())
    without = passage_ranks(["first_person"])
    # "I've been running farther to de-stress" is found either way; "I just signed up for a pottery
    # class… It's like therapy for me" only in her own words.
    assert with_own_words[1] is not None and without[1] is None, (with_own_words, without)
    # And no evidence turn found without it is lost with it.
    assert all(a is not None for a, b in zip(with_own_words, without, strict=True) if b is not None), (
        with_own_words,
        without,
    )


def test_only_a_question_naming_one_speaker_of_the_history_is_asked_twice(alice, alice_api, monkeypatch):
    from memory.engine import embeddings

    session = services.create_session(user=alice, sid="asked", x_budget=100_000, y_budget=100_000)
    spoken = [
        ("Melanie", "I went swimming."),
        ("Caroline", "I painted a lake."),
        ("Nate", "ok"),
        ("Will", "hi"),
    ]
    for name, text in spoken:
        services.append_items(session=session, items=[NewItem(role="user", text=text, name=name)])
    context = NewItem(role="tool", text="pytest: 3 passed", name="Melanie", kind="context")
    services.append_items(session=session, items=[context])
    asked = []
    real = embeddings.FastEmbedBackend.embed_queries

    def spy(self, texts):
        asked.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(embeddings.FastEmbedBackend, "embed_queries", spy)

    def ask(query, **body):
        asked.clear()
        recall(alice_api, "asked", query=query, **body)
        return asked

    assert ask("What does Melanie do?") == [["What does Melanie do?", "What do I do?"]]
    assert ask("What does Melanie do?", kind="history") == [["What does Melanie do?", "What do I do?"]]
    # Context items' names are tools': no rewrite for them.
    assert ask("What does Melanie do?", kind="context") == [["What does Melanie do?"]]
    # Two speakers named, none, or a keyword search: one question, or none embedded.
    assert ask("What do Melanie and Caroline both do?") == [["What do Melanie and Caroline both do?"]]
    assert ask("What was painted?") == [["What was painted?"]]
    # Of two speakers not joined, the question is about its subject; "will" is not the speaker Will.
    assert ask("What did Caroline paint for Melanie?") == [
        ["What did Caroline paint for Melanie?", "What did I paint for Melanie?"]
    ]
    assert ask("Where will Melanie swim?") == [["Where will Melanie swim?", "Where will I swim?"]]
    # The other speaker named, "her" may be hers: left as it is.
    assert ask("What did Caroline give Melanie for her birthday?") == [
        [
            "What did Caroline give Melanie for her birthday?",
            "What did I give Melanie for her birthday?",
        ]
    ]
    assert ask("What does Melanie do?", match="keyword") == []


def test_only_the_subjects_turns_are_boosted_and_no_name_is_expanded(alice, alice_api, monkeypatch):
    from memory.engine import ranking

    session = services.create_session(user=alice, sid="subject", x_budget=100_000, y_budget=100_000)
    for name, text in [("Joanna", "I will bake the pie."), ("Nate", "Here is my recipe."), ("Will", "hi")]:
        services.append_items(session=session, items=[NewItem(role="user", text=text, name=name)])
    services.append_items(
        session=session, items=[NewItem(role="tool", text="3 passed", name="pytest", kind="context")]
    )
    seen = {}
    real_read, real_expand = ranking.read_question, ranking._expansion_terms

    def read(text, speakers, *, people, rules):
        question = real_read(text, speakers, people=people, rules=rules)
        # The speakers whose turns the boost raises (ranking._boost reads `about`).
        seen[("boost", "history" if people else "context")] = question.about
        return question

    def expand(search, question, words):
        seen[("expand", search.kind)] = question.named
        return real_expand(search, question, words)

    monkeypatch.setattr(ranking, "read_question", read)
    monkeypatch.setattr(ranking, "_expansion_terms", expand)

    recall(alice_api, "subject", query="What did Joanna plan to do with the recipe Nate promised?")
    assert seen[("boost", "history")] == {"Joanna"}
    assert seen[("expand", "history")] == {"Joanna", "Nate"}  # neither name is a word to expand
    recall(alice_api, "subject", query="Did Joanna and Nate both bake?")
    assert seen[("boost", "history")] == {"Joanna", "Nate"}
    # A tool's name is a word of the question in any case, even after "the".
    recall(alice_api, "subject", query="What did the Pytest run print?")
    assert seen[("boost", "context")] == {"pytest"}


def test_recall_of_a_kind_the_session_holds_nothing_of_is_empty_not_an_error(alice, alice_api):
    session = services.create_session(user=alice, sid="only-history")
    services.append_items(session=session, items=[NewItem(role="user", text="I went swimming.")])

    answer = recall(alice_api, "only-history", query="swimming", kind="context")

    assert answer["results"] == {"history": [], "context": []}


def test_a_recall_switches_rules_off_by_name_and_the_server_by_setting(alice, alice_api, settings):
    _dated_session(alice)
    query = "What cake did Nate bake in November 2022?"

    def first_hit(**body):
        return top_texts(recall(alice_api, "dated", query=query, kind="history", **body))[0]

    assert first_hit().startswith("Made a lemon tart")
    # The month named no longer lifts its turns: the better match, in March, comes first.
    assert first_hit(rules_off=["time_boost"]).startswith("I baked a chocolate cake")
    assert first_hit(rules_off=["feedback"]).startswith("Made a lemon tart")
    settings.OTTO_RECALL_RULES_OFF = ["time_boost"]
    assert first_hit().startswith("I baked a chocolate cake")
    # A name that is no rule is refused, naming the field and the names there are.
    response = alice_api.post("/api/v1/sessions/dated/recall", {"query": query, "rules_off": ["time"]})
    assert response.status_code == 422
    assert response.json()["field"] == "rules_off.0" or response.json()["field"].startswith("rules_off")
    assert "time_boost" in response.json()["detail"]
