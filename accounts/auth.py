"""Bearer-token authentication for the API: every call starts from the token's user."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import DatabaseError
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from ottoweb.db.sqlite import not_waiting

from . import storage, throttle
from .models import ApiToken

log = logging.getLogger(__name__)

# Recording last use on every call would make every read a write; once a minute is enough.
LAST_USED_GRANULARITY = timedelta(minutes=1)


def token_owner(token: str) -> ApiToken | None:
    """The live token `token` names (its user loaded), or None: unknown, revoked, or its user inactive.

    The one check of a bearer token: the REST API, the MCP endpoint and `manage.py mcp` all call it.
    """
    if not token or len(token) > 200:
        return None
    row = storage.live_token(ApiToken.digest_of(token))
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_GRANULARITY:
        try:
            with not_waiting():
                ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        except DatabaseError as exc:
            # Bookkeeping only: a read-only, full or busy database must still answer reads (a
            # later request records the use).
            log.warning("token %s: last use not recorded: %s", row.prefix, exc)
    return row


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        row = token_owner(token)
        if row is None:
            # Wrong tokens from one address are throttled; a right token never is (accounts/throttle.py).
            wait = throttle.refuse_token(throttle.token_keys(request))
            if wait:
                raise throttle.Throttled(wait)
            return None
        request.user = row.user
        return row
