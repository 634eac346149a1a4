"""The request types views and API operations are annotated with: HttpRequest and what the
middleware or the API's authentication adds to it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from accounts.models import ApiToken


class HtmxRequest(HttpRequest):
    """A dashboard request. django_htmx's middleware sets `htmx` on every request: falsy unless
    htmx sent it, its `target` the id of the region asked for."""

    htmx: HtmxDetails


class UserRequest(HtmxRequest):
    """A dashboard request past `login_required`: `user` is the signed-in user, never anonymous."""

    user: User


class ApiRequest(HttpRequest):
    """An API request past the bearer-token check (accounts.auth.TokenAuth): `auth` is the caller's
    live token, `auth.user` the user every call starts from."""

    auth: ApiToken
