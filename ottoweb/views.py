"""The dashboard's login: Django's LoginView, throttled per (client address, account) and per address."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from . import throttle


class LoginView(auth_views.LoginView):
    """An address locked for this account, or for all, answers 429 with Retry-After and says how
    long to wait; no password is checked meanwhile. Another address is not held back
    (ottoweb/throttle.py)."""

    keys: list[throttle.Key]

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        self.keys = throttle.login_keys(request, str(request.POST.get("username", "")))
        wait = throttle.locked_for(self.keys)
        if wait:
            return self.locked(wait)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form: Any) -> HttpResponse:
        wait = throttle.record_failure(self.keys)
        if wait:
            return self.locked(wait)
        return super().form_invalid(form)

    def form_valid(self, form: Any) -> HttpResponse:
        throttle.forgive(*self.keys)
        return super().form_valid(form)

    def locked(self, wait: int) -> HttpResponse:
        form = self.get_form_class()(self.request)  # an empty form: nothing of the attempt is echoed
        response = self.render_to_response(self.get_context_data(form=form, locked=wait), status=429)
        response["Retry-After"] = str(wait)
        return response
