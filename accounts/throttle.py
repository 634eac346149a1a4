"""Throttled sign-in: password logins per (address, account) and per address, bearer tokens per address.

A login failure counts against two keys: the pair (client address, typed username) and the address
alone. A pair that fails OTTO_AUTH_FAILURES times, or an address that fails
OTTO_AUTH_ADDRESS_FAILURES times at any accounts, is locked for OTTO_AUTH_LOCKOUT_SECONDS, twice as
long for each failure after that lock ends, never longer than OTTO_AUTH_LOCKOUT_MAX_SECONDS; a key
with no failure for FORGET_AFTER starts again. A locked login answers 429 with Retry-After before
any password is checked (no hashing cost, and a right password does not get through).

No account is ever locked as such: strangers lock only the addresses they try from, so the user,
from any address that has not failed, is let in by the right password, and nothing a stranger does
lengthens her wait. A login forgives its own typos: the pair's failures are forgotten and taken
off its address's count (failures at other accounts stay, or one good account would let an
address guess at every other).

A bearer token that matches no token is counted against its address and answers 429 while the
address is locked. A right token is never refused for its address: tokens are 256 random bits that
no amount of guessing finds, and agents behind one address must not be locked out by another's
mistakes.

An address is the connection's (or, behind a proxy, the one OTTO_CLIENT_ADDRESS_HEADER names); an
IPv6 address counts as its /64, which one host or household is given whole. The counts live in the
database (`AuthFailure`), so every web process sees them. Only failures write; a successful request
reads nothing more than before (a login reads its keys' rows once).
"""

from __future__ import annotations

import ipaddress
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

from ottoweb.errors import ServiceError

from .models import AuthFailure

log = logging.getLogger(__name__)

FORGET_AFTER = timedelta(days=1)


class Throttled(ServiceError):
    """Too many failed sign-ins from this address: 429 with Retry-After."""

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
    cannot forge). Without that setting no header is believed."""
    header = settings.OTTO_CLIENT_ADDRESS_HEADER
    forwarded = request.headers.get(header, "") if header else ""
    return address_of(str(request.META.get("REMOTE_ADDR", "")), forwarded)


def address_of(remote: str, forwarded: str) -> str:
    """`client_address` from its parts, for callers without a Django request (the MCP gate)."""
    last = forwarded.split(",")[-1].strip() if settings.OTTO_CLIENT_ADDRESS_HEADER else ""
    return _throttled_unit(last or remote)


def _throttled_unit(address: str) -> str:
    """What one client is counted as: an IPv4 address, or the /64 network of an IPv6 one (a host
    given a /64 could otherwise try from a fresh address each time). A port some proxies append
    ("1.2.3.4:5678", "[2001:db8::1]:5678") and a zone ("fe80::1%eth0") are not part of it."""
    text = address.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    text = text.partition("%")[0]
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        # Not an address (a proxy's "unknown"): counted as the text it is, without the key separator.
        return text.replace("|", "")[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def login_keys(request: HttpRequest, username: str) -> list[Key]:
    """The pair (address, typed username) and the address: the same keys whether or not the
    account exists, so no answer tells one from the other."""
    address = client_address(request)
    account = username.strip().lower()
    return [
        Key(f"login:{address}|{account}"[:200], settings.OTTO_AUTH_FAILURES),
        Key(f"login-address:{address}", settings.OTTO_AUTH_ADDRESS_FAILURES),
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

    now = timezone.now()
    rows = AuthFailure.objects.filter(key__in=[k.name for k in keys]).values_list("locked_until", flat=True)
    return max((_wait(until, now) for until in rows), default=0)


def _lockout(over: int) -> timedelta:
    """The lock-out after the `over`-th failure past the limit (0: the one that reached it)."""
    base = timedelta(seconds=settings.OTTO_AUTH_LOCKOUT_SECONDS)
    return min(base * 2 ** min(over, 32), timedelta(seconds=settings.OTTO_AUTH_LOCKOUT_MAX_SECONDS))


def record_failure(keys: Sequence[Key]) -> int:
    """Count a failed attempt against each key; the seconds a lock-out it caused lasts (0: none).

    A database that cannot take the write (busy, full, read-only) is logged: the attempt is still
    refused, it is only not counted.
    """

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


def forgive(pair: Key, address: Key) -> None:
    """A successful login: the pair's failures were its user's typos. They are forgotten, and taken
    off the address's count; the address's failures at other accounts stay. Writes only when the
    pair has a row."""

    try:
        if not AuthFailure.objects.filter(key=pair.name).exists():
            return
        with transaction.atomic():
            typos = AuthFailure.objects.filter(key=pair.name).values_list("failures", flat=True).first()
            if typos is None:
                return
            AuthFailure.objects.filter(key=pair.name).delete()
            AuthFailure.objects.filter(key=address.name, failures__lte=typos).delete()
            AuthFailure.objects.filter(key=address.name).update(failures=F("failures") - typos)
    except DatabaseError as exc:
        log.warning("sign-in failures not cleared: %s", exc)
