"""The accounts' pages: logging in (password, throttled; one-time links), revoking a token, the
audit trail. The Account page shows memory's learned window limits beside the tokens, so memory
renders it (memory/views/account.py: issuing a token, setting the password); its Revoke buttons
post here."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.tokens import default_token_generator
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ottoweb.requests import HtmxRequest, UserRequest

from . import services, throttle
from .models import ApiToken, AuditEntry

# --- logging in with a password ------------------------------------------------------------------


class LoginView(auth_views.LoginView):
    """An address locked for this account, or for all, answers 429 with Retry-After and says how
    long to wait; no password is checked meanwhile. Another address is not held back
    (accounts/throttle.py)."""

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


# --- one-time login links (manage.py login_link) -------------------------------------------------


def _link_user(uidb64: str, token: str) -> Any:
    try:
        user = get_user_model().objects.filter(pk=force_str(urlsafe_base64_decode(uidb64))).first()
    except (ValueError, TypeError, OverflowError):
        return None
    if user is None or not user.is_active or not default_token_generator.check_token(user, token):
        return None
    return user


@require_http_methods(["GET", "POST"])
def login_link(request: HtmxRequest, uidb64: str, token: str) -> HttpResponse:
    """GET shows a button (so a link previewer cannot spend the link); POST logs in, once.

    The token is Django's password-reset token: it dies with the first login (last_login changes),
    with a password change, and after PASSWORD_RESET_TIMEOUT.
    """
    user = _link_user(uidb64, token)
    if user is None:
        return render(request, "registration/login_link.html", {"expired": True}, status=410)
    if request.method == "GET":
        return render(request, "registration/login_link.html", {"link_user": user})
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    if not user.has_usable_password():
        messages.info(request, "Welcome! Set a password below to log in again without a link.")
        return redirect("tokens")
    return redirect("home")


# --- API tokens ----------------------------------------------------------------------------------


@require_POST
@login_required
def revoke_token(request: UserRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.filter(user=request.user), pk=token_id)
    services.revoke_token(token=token)
    messages.success(request, f"Revoked token “{token.name}”: it no longer works.")
    return redirect("tokens")


# --- the audit trail -----------------------------------------------------------------------------


@require_GET
@login_required
def audit(request: UserRequest) -> HttpResponse:
    """The user's audit trail (every state-changing call and action), optionally one session's."""
    sid = request.GET.get("session", "")[:128]
    rows = AuditEntry.objects.for_user(request.user, sid)
    page = Paginator(rows.order_by("-created_at", "-id"), 50).get_page(request.GET.get("page"))
    extra = f"session={quote(sid)}&" if sid else ""
    return render(
        request, "accounts/audit.html", {"page": page, "sid": sid, "extra": extra, "region": "audit-list"}
    )
