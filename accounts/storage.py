"""The token lookup every API call makes, in SQL written once from the model's fields (raw SQL
lives in storage modules only; `ottoweb.db.rows.first_row` says why it is not the ORM's)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from ottoweb.db.rows import first_row

from .models import ApiToken


def live_token(digest: str) -> ApiToken | None:
    """The unrevoked token with this digest, its user loaded (None: no such token)."""
    token = first_row(ApiToken, "digest = %s AND revoked_at IS NULL", [digest])
    # Two lookups, not a join: raw() builds one model a row.
    if token is not None:
        user = first_row(get_user_model(), "id = %s", [token.user_id])
        if user is None:
            return None
        token.user = user
    return token
