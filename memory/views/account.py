"""The Account page: API tokens (issued here, revoked by accounts' view), learned window limits,
the password. Logging in, login links and the audit trail are accounts' pages (accounts/views.py)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from accounts import services as accounts
from accounts.forms import TokenForm
from accounts.models import ApiToken
from ottoweb.requests import UserRequest

from ..models import LearnedWindow
from ..services import runs

# The token just issued, kept in the login's session until the page after the POST shows it.
ISSUED_KEY = "ottoweb_issued_token"

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
    """GET lists the tokens; POST issues one and goes back to GET (a reload issues no other), which
    shows it once: the plain token waits in the login's session for that one page, then only its
    digest is kept."""
    if request.method == "GET":
        issued = request.session.pop(ISSUED_KEY, None)
        if issued is None:
            return render(request, "memory/account.html", _account(request))
        row = ApiToken.objects.filter(user=request.user, pk=issued["id"]).first()
        response = render(
            request, "memory/account.html", _account(request, issued=row, plain=issued["plain"])
        )
        add_never_cache_headers(response)  # Back or a cache never shows the token again
        return response
    form = TokenForm(request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, token_form=form), status=422)
    row, plain = accounts.issue_token(user=request.user, name=form.cleaned_data["name"])
    request.session[ISSUED_KEY] = {"id": row.pk, "plain": plain}
    return redirect("tokens")


@require_POST
@login_required
def clear_learned(request: UserRequest, learned_id: int) -> HttpResponse:
    """Forget a window limit this user's runs taught; their fits use the table's window again."""
    row = get_object_or_404(LearnedWindow.objects.filter(user=request.user), pk=learned_id)
    runs.clear_learned_limit(user=request.user, model=row.model)
    messages.success(request, f"Cleared the learned limit of {row.model}: its table window applies again.")
    return redirect("tokens")


@require_http_methods(["GET", "POST"])
@login_required
def password(request: UserRequest) -> HttpResponse:
    """POST sets the password. GET (the address a refused password stays at) goes to the Account page."""
    if request.method == "GET":
        return redirect("tokens")
    form = _password_form(request, request.POST)
    if not form.is_valid():
        return render(request, "memory/account.html", _account(request, password_form=form), status=422)
    user = form.save()
    # Changing the password ends other logins; keep this one.
    from django.contrib.auth import update_session_auth_hash

    update_session_auth_hash(request, user)
    messages.success(request, "Password saved. You can log in with it from now on.")
    return redirect("tokens")
