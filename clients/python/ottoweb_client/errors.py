"""The client's one exception type, and what it reads of a refusal or a failure to get an answer;
the checks made of input before anything is sent (a time, a session id)."""

from __future__ import annotations

import http.client
import json
import re
from datetime import datetime

# The ids a session can have (the server's docs/api.md, POST /sessions): any other is refused here,
# before it is sent (a URL cannot address it: "a/b" and "import" reach other routes, "." and ".."
# are dot segments).
SESSION_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")
UNADDRESSABLE_IDS = frozenset({".", "..", "import"})


class OttowebError(Exception):
    """A refused or failed call: `code` is the API's machine code, `detail` says what is wrong;
    `retry_after`, the seconds the server's Retry-After asks to wait (a 429 or 503), else None."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int = 0,
        field: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {detail}")
        self.code, self.detail, self.status, self.field = code, detail, status, field
        self.retry_after = retry_after


class OttowebInputError(OttowebError, ValueError):
    """Input the adapter cannot map onto the API; raised before anything is written (code `invalid_input`)."""

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__("invalid_input", detail, field=field)


def said(exc: BaseException) -> str:
    """An exception in words: http.client's BadStatusLine is only the line it could not read."""
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the connection was closed without an answer"
    if isinstance(exc, http.client.BadStatusLine):
        return f"not an HTTP answer: {str(exc)[:200]!r}"
    return str(exc) or type(exc).__name__


def excerpt(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")[:500]


def refusal(status: int, raw: bytes, retry_after: str | None = None) -> OttowebError:
    wait = int(retry_after) if retry_after and retry_after.strip().isdigit() else None  # not an HTTP date
    try:
        answer = json.loads(raw)
        return OttowebError(
            answer["code"], answer["detail"], status=status, field=answer.get("field"), retry_after=wait
        )
    except (ValueError, KeyError, TypeError):
        return OttowebError("http_error", f"HTTP {status}: {excerpt(raw)}", status=status, retry_after=wait)


def session_id(sid: str) -> str:
    """`sid`, when a session can have it; else OttowebError `invalid` naming it (nothing is sent)."""
    if not isinstance(sid, str) or not SESSION_ID.match(sid) or sid in UNADDRESSABLE_IDS:
        raise OttowebError(
            "invalid",
            f"no session can have the id {sid!r}: a session id is 1-128 characters of letters, digits, "
            "'.', '_', ':' or '-', and not '.', '..' or 'import'",
            field="session_id",
        )
    return sid


def moment(value: str | datetime | None, field: str) -> str | None:
    """A time as the API takes it: a datetime as ISO 8601, which must carry a UTC offset (OttowebError
    `invalid` otherwise, nothing sent); a string as given."""
    if not isinstance(value, datetime):
        return value
    if value.utcoffset() is None:
        raise OttowebError(
            "invalid",
            f"{field}: the datetime {value.isoformat()} has no UTC offset, and the server needs one "
            "(datetime.now(timezone.utc), or .astimezone() for the local zone)",
            field=field,
        )
    return value.isoformat()
