"""API tokens: issuing and revoking them (the dashboard, `create_token` and the tests call these)."""

from __future__ import annotations

from django.utils import timezone

from .models import ApiToken


def issue_token(*, user, name: str) -> tuple[ApiToken, str]:
    """Issue an API token for `user`; the plain token is returned once and never stored."""
    return ApiToken.issue(user, name)


def revoke_token(*, token: ApiToken) -> None:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
