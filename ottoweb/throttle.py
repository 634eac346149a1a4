"""Throttled sign-in: password logins per account and per client address, bearer tokens per address.

A key (an account, or a client address) that fails OTTO_AUTH_FAILURES times (an address:
OTTO_AUTH_ADDRESS_FAILURES) is locked for OTTO_AUTH_LOCKOUT_SECONDS, twice as long for each failure
after that lock ends, up to LOCKOUT_MAX; a key with no failure for FORGET_AFTER starts again.
A locked login answers 429 with Retry-After before any password is checked (no hashing cost, and a
right password does not get through); a bearer token that matches no token answers 429 while its
address is locked. A right token is never refused for its address: tokens are 256 random bits that
no amount of guessing finds, and agents behind one address must not be locked out by another's
mistakes.

The counts live in the database (`AuthFailure`), so every web process sees them. Only failures
write; a successful request reads nothing more than before (a login reads its keys' rows once).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone

from .errors import ServiceError

log = logging.getLogger(__name__)

LOCKOUT_MAX = timedelta(hours=1)
FORGET_AFTER = timedelta(days=1)


class Throttled(ServiceError):
    """Too many failed sign-ins from this address (or of this account): 429 with Retry-After."""

    status = 429
    code = "throttled"

    def __init__(self, wait: int) -> None:
        super().__init__(f"too many failed sign-ins; try again in {wait} s")
        self.retry_after = wait


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    limit: int  # failures before a lock-out


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or behind a proxy the last address of the header it sets
    (OTTO_CLIENT_ADDRESS_HEADER, e.g. X-Forwarded-For: the one the proxy appended, which a client
    cannot forge)."""
    header = settings.OTTO_CLIENT_ADDRESS_HEADER
    forwarded = request.headers.get(header, "") if header else ""
    return address_of(str(request.META.get("REMOTE_ADDR", "")), forwarded)


def address_of(remote: str, forwarded: str) -> str:
    """`client_address` from its parts, for callers without a Django request (the MCP gate)."""
    last = forwarded.split(",")[-1].strip() if settings.OTTO_CLIENT_ADDRESS_HEADER else ""
    return (last or remote)[:100]


def login_keys(request: HttpRequest, username: str) -> list[Key]:
    return [
        Key(f"login-account:{username.strip().lower()[:150]}", settings.OTTO_AUTH_FAILURES),
        Key(f"login-address:{client_address(request)}", settings.OTTO_AUTH_ADDRESS_FAILURES),
    ]


def token_keys(request: HttpRequest) -> list[Key]:
    return address_token_keys(client_address(request))


def address_token_keys(address: str) -> list[Key]:
    """Wrong bearer tokens are counted per address, over the REST API and MCP alike."""
    return [Key(f"token-address:{address}", settings.OTTO_AUTH_ADDRESS_FAILURES)]


def refuse_token(keys: Sequence[Key]) -> int:
    """A bearer token that matched none: the seconds its address must wait (0: just refused).

    A locked address is not counted again (the lock-out does not grow while it waits)."""
    return locked_for(keys) or record_failure(keys)


def _wait(until: datetime | None, now: datetime) -> int:
    return math.ceil((until - now).total_seconds()) if until is not None and until > now else 0


def locked_for(keys: Sequence[Key]) -> int:
    """Seconds until every one of `keys` may try again (0: none is locked). One read."""
    from memory.models import AuthFailure

    now = timezone.now()
    rows = AuthFailure.objects.filter(key__in=[k.name for k in keys]).values_list("locked_until", flat=True)
    return max((_wait(until, now) for until in rows), default=0)


def _lockout(over: int) -> timedelta:
    """The lock-out after the `over`-th failure past the limit (0: the one that reached it)."""
    base = timedelta(seconds=settings.OTTO_AUTH_LOCKOUT_SECONDS)
    return min(base * 2 ** min(over, 32), LOCKOUT_MAX)


def record_failure(keys: Sequence[Key]) -> int:
    """Count a failed attempt against each key; the seconds a lock-out it caused lasts (0: none).

    A database that cannot take the write (busy, full, read-only) is logged: the attempt is still
    refused, it is only not counted.
    """
    from memory.models import AuthFailure

    now = timezone.now()
    wait = 0
    try:
        with transaction.atomic():
            # Keys nobody has failed on for a day: gone, so the table holds only recent trouble.
            AuthFailure.objects.filter(last_failure_at__lt=now - FORGET_AFTER).delete()
            for key in keys:
                AuthFailure.objects.get_or_create(key=key.name, defaults={"last_failure_at": now})
                AuthFailure.objects.filter(key=key.name).update(
                    failures=F("failures") + 1, last_failure_at=now
                )
                failures = AuthFailure.objects.filter(key=key.name).values_list("failures", flat=True)[0]
                if failures >= key.limit:
                    until = now + _lockout(failures - key.limit)
                    AuthFailure.objects.filter(key=key.name).update(locked_until=until)
                    wait = max(wait, _wait(until, now))
    except DatabaseError as exc:
        log.warning("failed sign-in not counted: %s", exc)
    return wait


def forget(key: Key) -> None:
    """A successful login: its account's failures are forgotten (its address's are not, or one
    good account would let an address guess at every other). Writes only when there is a row."""
    from memory.models import AuthFailure

    try:
        if AuthFailure.objects.filter(key=key.name).exists():
            AuthFailure.objects.filter(key=key.name).delete()
    except DatabaseError as exc:
        log.warning("sign-in failures not cleared: %s", exc)
