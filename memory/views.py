"""Dashboard views: thin glue from HTTP to one read or one service call."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Session


@login_required
def home(request: HttpRequest) -> HttpResponse:
    sessions = Session.objects.for_user(request.user).with_totals().order_by("-updated_at")[:20]
    return render(request, "memory/home.html", {"sessions": sessions})
