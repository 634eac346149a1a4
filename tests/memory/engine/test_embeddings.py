from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from memory.engine.embeddings import (
    MINILM_STAMP,
    EmbeddingUnavailable,
    FastEmbedBackend,
    RecentDocuments,
    WordLlamaBackend,
    assemble_minilm_folder,
    build,
    canonical,
)

SHARED_MINILM = Path(__file__).resolve().parents[4] / "shared" / "models" / "all-MiniLM-L6-v2-onnx-int8"
SENTENCES = ["The cat sat on the mat.", "A kitten rested on a rug.", "Stock prices fell sharply today."]


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a non-loopback connection fails the test."""
    real_connect = socket.socket.connect

    def guarded(self, address):
        host = address[0] if isinstance(address, tuple) else address
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"network access attempted: {address}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


def test_fastembed_offline_without_a_local_model_fails_at_once_with_a_clear_message(
    no_network, tmp_path, monkeypatch
):
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path))
    backend = build("fastembed:BAAI/bge-small-en-v1.5")

    with pytest.raises(EmbeddingUnavailable) as failure:
        backend.embed_query("hello")

    assert str(failure.value).startswith("fastembed could not load BAAI/bge-small-en-v1.5:")


def test_fastembed_loads_the_shared_model_folder_and_embeds_for_real(no_network):
    backend = build(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{SHARED_MINILM}")
    vectors = backend.embed_documents(SENTENCES)

    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > 0.5 > similarity[0, 2]


def test_default_model_is_minilm_assembled_from_packages_identical_to_the_shared_folder(no_network, tmp_path):
    folder = assemble_minilm_folder(tmp_path / "minilm")
    packaged = FastEmbedBackend(
        name=MINILM_STAMP, model="sentence-transformers/all-MiniLM-L6-v2", folder=folder
    )
    shared = build(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{SHARED_MINILM}")

    assert canonical("minilm") == MINILM_STAMP
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["model.onnx", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"]
    )
    assert np.allclose(packaged.embed_documents(SENTENCES), shared.embed_documents(SENTENCES), atol=1e-6)


def test_a_tampered_packaged_file_is_refused(tmp_path):
    folder = assemble_minilm_folder(tmp_path / "minilm")
    (folder / "tokenizer.json").write_text("{}")
    # Re-assembling checks every file again and replaces the tampered one from the package.
    again = assemble_minilm_folder(folder)
    assert (again / "tokenizer.json").stat().st_size > 100_000


def test_wordllama_works_offline_from_its_wheel(no_network):
    backend = WordLlamaBackend()
    vectors = backend.embed_documents(SENTENCES)

    assert vectors.shape == (3, 256)
    assert float(vectors[0] @ backend.embed_query("where did the cat sit?")) > float(
        vectors[2] @ backend.embed_query("where did the cat sit?")
    )


def test_bge_gets_its_query_prefix_and_other_models_do_not():
    assert build("fastembed:BAAI/bge-small-en-v1.5").query_prefix.startswith("Represent this sentence")
    assert build("minilm").query_prefix == ""


def test_unknown_spec_is_refused():
    with pytest.raises(ValueError, match="unknown embedding model"):
        build("word2vec")


def test_minilm_reads_its_trained_256_tokens_and_small_batches_embed_the_same():
    """Past 256 word pieces the text no longer changes MiniLM's vector (its tokenizer config says 512).

    Batches of 8 with onnxruntime's arena off (what keeps the web process small) give the same
    vectors as one text at a time.
    """
    backend = build(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{SHARED_MINILM}")
    long = " ".join(f"word{i}" for i in range(150))  # 381 word pieces: past 256, inside 512
    same_head = backend.embed_documents([long, long + " The stock market crashed and burned."])
    assert np.allclose(same_head[0], same_head[1], atol=1e-6)

    texts = [f"Note {i}: {SENTENCES[i % 3]}" for i in range(19)]
    batched = backend.embed_documents(texts)
    one_by_one = np.vstack([backend.embed_documents([t]) for t in texts])
    assert backend.batch_size == 8 and not backend.arena
    assert np.allclose(batched, one_by_one, atol=1e-4)


def test_a_long_previous_turn_cannot_push_the_turn_out_of_its_vector():
    from memory.engine.retrieval import PREVIOUS_CHARS, Said, dense_text

    tool_output = "x" * 50_000
    text = dense_text(Said("The deploy finished.", "assistant"), Said(tool_output, "tool"))
    assert text.endswith("assistant: The deploy finished.")
    assert len(text) < PREVIOUS_CHARS + 100


@pytest.mark.parametrize(
    "spec", [f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{SHARED_MINILM}", "wordllama"]
)
def test_several_questions_embed_in_one_call_as_each_would_alone(spec, no_network):
    backend = build(spec)
    questions = ["What does Melanie do to destress?", "What do I do to destress?"]

    together = backend.embed_queries(questions)

    assert together.shape == (2, backend.dim)
    for row, question in zip(together, questions, strict=True):
        assert np.allclose(row, backend.embed_query(question), atol=1e-4)
    assert not np.allclose(together[0], together[1], atol=1e-2)


def test_every_question_of_a_batch_gets_the_models_query_prefix(no_network):
    prefix = build("fastembed:BAAI/bge-small-en-v1.5").query_prefix
    # BGE's files are not on this machine: MiniLM's folder under BGE's rules shows the prefix.
    backend = FastEmbedBackend(
        name="bge-rules",
        model="sentence-transformers/all-MiniLM-L6-v2",
        folder=SHARED_MINILM,
        query_prefix=prefix,
    )
    questions = ["where did the cat sit?", "what fell?"]

    assert np.allclose(
        backend.embed_queries(questions), backend.embed_documents([prefix + q for q in questions]), atol=1e-4
    )


def _copy_of_minilm(folder: Path, pooling: dict[str, bool] | None = None) -> Path:
    folder.mkdir()
    for path in SHARED_MINILM.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    if pooling is not None:
        (folder / "1_Pooling").mkdir()
        (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return folder


def test_a_model_fastembed_does_not_list_is_run_from_its_folder_mean_pooled(no_network, tmp_path):
    # What a user does with an ONNX export of, say, all-mpnet-base-v2: fastembed lists no such model.
    folder = _copy_of_minilm(tmp_path / "exported", {"pooling_mode_mean_tokens": True})
    listed = build(f"fastembed:sentence-transformers/all-MiniLM-L6-v2@{SHARED_MINILM}")
    unlisted = build(f"fastembed:local/minilm-export-mean@{folder}")

    assert np.allclose(unlisted.embed_documents(SENTENCES), listed.embed_documents(SENTENCES), atol=1e-6)
    assert unlisted.embed_query(SENTENCES[0]).shape == (384,)


def test_an_unlisted_model_whose_folder_says_cls_pooling_is_cls_pooled(no_network, tmp_path):
    folder = _copy_of_minilm(tmp_path / "exported", {"pooling_mode_cls_token": True})
    vectors = build(f"fastembed:local/minilm-export-cls@{folder}").embed_documents(SENTENCES[:1])

    # The first token's hidden state, computed here from the same ONNX file and tokenizer.
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128, which one sentence alone does not need
    ids = tokenizer.encode(SENTENCES[0]).ids
    feed = {"input_ids": np.array([ids]), "attention_mask": np.ones((1, len(ids)), dtype=np.int64)}
    feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
    hidden = onnxruntime.InferenceSession(str(folder / "model.onnx")).run(None, feed)[0]
    cls = hidden[0, 0] / np.linalg.norm(hidden[0, 0])
    assert np.allclose(vectors[0], cls, atol=1e-4)


def test_an_unlisted_model_whose_folder_holds_no_onnx_file_is_refused_clearly(no_network, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 384}))

    with pytest.raises(EmbeddingUnavailable, match="its folder holds no .onnx file"):
        build(f"fastembed:local/nothing-here@{folder}").embed_query("hello")


def test_recent_documents_embed_each_text_once_per_model_in_order_and_stay_bounded():
    model = WordLlamaBackend()
    calls: list[list[str]] = []

    class Counting:
        name, dim = model.name, 256

        def embed_documents(self, texts):
            calls.append(list(texts))
            return model.embed_documents(texts)

    class Renamed(Counting):
        name = "another:model"

    recent = RecentDocuments(capacity=3)
    first = recent.embed_documents(Counting(), SENTENCES[:2])
    again = recent.embed_documents(Counting(), [SENTENCES[2], SENTENCES[0]])

    assert calls == [SENTENCES[:2], [SENTENCES[2]]]  # only the new text goes to the model
    assert np.array_equal(first, model.embed_documents(SENTENCES[:2]))
    assert np.array_equal(again, model.embed_documents([SENTENCES[2], SENTENCES[0]]))
    recent.embed_documents(Renamed(), SENTENCES[:1])  # another model's vector is its own
    assert calls[-1] == SENTENCES[:1]
    # Capacity 3: the least recently used (SENTENCES[1]) left; SENTENCES[0] was used since.
    recent.embed_documents(Counting(), [SENTENCES[0], SENTENCES[1]])
    assert calls[-1] == [SENTENCES[1]]
    assert recent.embed_documents(Counting(), []).shape == (0, 256)
    # Taken to be stored: a held vector is handed over and let go, a new one is not kept.
    taken = recent.embed_documents(Counting(), ["A new sentence.", SENTENCES[0]], keep=False)
    assert calls[-1] == ["A new sentence."]
    assert np.array_equal(taken, model.embed_documents(["A new sentence.", SENTENCES[0]]))
    recent.embed_documents(Counting(), ["A new sentence.", SENTENCES[0]])
    assert calls[-1] == ["A new sentence.", SENTENCES[0]]
