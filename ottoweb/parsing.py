"""JSON request bodies with a bounded nesting depth, for the API and the dashboard's import form.

`json.loads` raises RecursionError on ~1,000 levels (a 500 page before this), and pydantic walks
deep values recursively too; no document this server writes nests more than a few levels.
"""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from ninja.parser import Parser


class TooDeep(ValueError):
    """The JSON nests deeper than OTTO_MAX_JSON_DEPTH."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the JSON nests deeper than {limit} levels of arrays and objects (the limit)")


class NotJson(ValueError):
    """Bytes that are not JSON text: not UTF-8, or not JSON. Its words complete a sentence naming
    what was read ("the body …", "the document …"), as the API and the import say them."""


class TooLong(ValueError):
    """A number in the JSON has more digits than Python converts (sys.get_int_max_str_digits())."""

    def __init__(self, digits: int, limit: int) -> None:
        super().__init__(
            f"a number in the JSON has {digits:,} digits, past the {limit:,} this server reads "
            "(a number it stores lies between -(2^53 - 1) and 2^53 - 1)"
        )


def _integer(text: str) -> int:
    # json.loads would raise a bare ValueError past Python's limit (ninja's 400 "Cannot parse"); said here.
    limit = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if limit and digits > limit:
        raise TooLong(digits, limit)
    return int(text)


def depth_within(value: Any, limit: int) -> bool:
    """Whether no array or object in `value` lies more than `limit` levels deep (iteratively)."""
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if level > limit:
            return False
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return True


def loads(text: str | bytes) -> Any:
    """`json.loads`, raising TooDeep (a ValueError) beyond OTTO_MAX_JSON_DEPTH levels and TooLong
    (one too) for a number of more digits than Python converts."""
    import json

    limit = settings.OTTO_MAX_JSON_DEPTH
    try:
        value = json.loads(text, parse_int=_integer)
    except RecursionError:
        raise TooDeep(limit) from None
    if not depth_within(value, limit):
        raise TooDeep(limit)
    return value


def read_json(raw: bytes) -> Any:
    """`loads` of a request's bytes, read as json.loads reads bytes (UTF-8, a leading byte-order
    mark skipped; UTF-16 and UTF-32 recognised by their zero bytes), raising NotJson for what is
    not JSON text, in words, where json.loads would raise its exceptions bare."""
    import json

    try:
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
    except UnicodeDecodeError as exc:
        raise NotJson(f"is not UTF-8 text (byte {exc.start + 1:,} cannot be read)") from None
    try:
        return loads(text)
    except json.JSONDecodeError as exc:
        raise NotJson(f"is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


class BoundedParser(Parser):
    """ninja's body parser with the depth bound: a too-deep body is a 422, never a 500."""

    def parse_body(self, request: HttpRequest) -> Any:
        # NotJson, TooDeep and TooLong reach ottoweb.api's HttpError handler as the cause of ninja's
        # 400 "Cannot parse request body": a 422 there, saying which.
        try:
            return read_json(request.body)
        except NotJson as exc:
            sent = request.content_type or "no content type"
            if sent != "application/json":
                # A form post or a plain-text upload: the likeliest fix is to send JSON.
                raise NotJson(f"{exc} (it was sent as {sent}; the API reads JSON)") from None
            raise
