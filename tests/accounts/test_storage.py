"""The token lookup in SQL written once (accounts/storage.py) finds live tokens only, its user loaded."""

from __future__ import annotations

import pytest

from accounts import services, storage
from accounts.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_token_lookup_loads_its_user_and_finds_no_revoked_or_unknown_token(
    alice, django_assert_num_queries
):
    token, plain = ApiToken.issue(alice, "laptop")
    found = storage.live_token(ApiToken.digest_of(plain))
    with django_assert_num_queries(0):
        assert found.user.username == "alice"

    assert storage.live_token(ApiToken.digest_of(plain + "x")) is None
    services.revoke_token(token=token)
    assert storage.live_token(ApiToken.digest_of(plain)) is None
