"""The account pages: password, API tokens, learned window limits, the audit trail, login links."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.contrib.auth.tokens import default_token_generator
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from ottoweb.requests import HtmxRequest, UserRequest

from .. import services
from ..forms import TokenForm
from ..models import ApiToken, AuditEntry, LearnedWindow
from ..services import runs

# --- password and API tokens ---------------------------------------------------------------------


def _password_form(request: UserRequest, data: Any = None) -> SetPasswordForm | PasswordChangeForm:
    if request.user.has_usable_password():
        return PasswordChangeForm(request.user, data)
    return SetPasswordForm(request.user, data)


def _account(request: UserRequest, **extra: Any) -> dict[str, Any]:
    tokens = ApiToken.objects.filter(user=request.user).order_by("revoked_at", "-created_at")
    context = {
        "tokens": tokens,
        "token_form": TokenForm(),
        "password_form": _password_form(request),
        "learned": runs.learned_limits(user=request.user),
    }
    context.update(extra)
    return context


@require_http_methods(["GET", "POST"])
@login_required
def tokens(request: UserRequest) -> HttpResponse:
    """GET lists the tokens; POST issues one and shows it once (only its digest is kept)."""
    if request.method == "GET":
        return render(request, "memory/account.html", _account(request))
    form = TokenForm(request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, token_form=form), status=422)
    row, plain = services.issue_token(user=request.user, name=form.cleaned_data["name"])
    return render(request, "memory/account.html", _account(request, issued=row, plain=plain), status=201)


@require_POST
@login_required
def revoke_token(request: UserRequest, token_id: int) -> HttpResponse:
    token = get_object_or_404(ApiToken.objects.filter(user=request.user), pk=token_id)
    services.revoke_token(token=token)
    messages.success(request, f"Revoked token “{token.name}”: it no longer works.")
    return redirect("tokens")


@require_POST
@login_required
def clear_learned(request: UserRequest, learned_id: int) -> HttpResponse:
    """Forget a window limit this user's runs taught; their fits use the table's window again."""
    row = get_object_or_404(LearnedWindow.objects.filter(user=request.user), pk=learned_id)
    runs.clear_learned_limit(user=request.user, model=row.model)
    messages.success(request, f"Cleared the learned limit of {row.model}: its table window applies again.")
    return redirect("tokens")


@require_POST
@login_required
def password(request: UserRequest) -> HttpResponse:
    form = _password_form(request, request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, password_form=form), status=422)
    user = form.save()
    # Changing the password ends other logins; keep this one.
    from django.contrib.auth import update_session_auth_hash

    update_session_auth_hash(request, user)
    messages.success(request, "Password saved. You can log in with it from now on.")
    return redirect("tokens")


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
        request, "memory/audit.html", {"page": page, "sid": sid, "extra": extra, "region": "audit-list"}
    )
