"""Content addressing: a chunk's identity is the sha256 of its text."""

from __future__ import annotations

import hashlib


def content_hash(text: str) -> str:
    """Hex sha256 of the UTF-8 text; the same text always gets the same hash."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
