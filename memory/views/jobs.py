"""A job's progress page, which htmx polls until the job is done."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django_htmx.http import HttpResponseStopPolling

from ottoweb.requests import UserRequest

from ..models import Job
from .common import changed


@require_GET
@login_required
def job(request: UserRequest, job_id: str) -> HttpResponse:
    """A job's progress. htmx polls the partial; a finished job answers 286, which stops the polling."""
    row = get_object_or_404(Job.objects.for_user(request.user).select_related("session"), pk=job_id)
    context = {"job": row, "session": row.session}
    if not request.htmx:
        return render(request, "memory/job.html", context)
    response = render(request, "memory/_job.html", context)
    if row.status in (Job.DONE, Job.FAILED):
        return changed(HttpResponseStopPolling(response.content))
    return response
