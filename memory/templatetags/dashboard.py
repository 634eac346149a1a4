"""Small template filters for the dashboard: fills, day counts, short hashes."""

from __future__ import annotations

import math
import re
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from memory.reads import fill

register = template.Library()


@register.filter
def percent_of(tokens: int, budget: int) -> int:
    return fill(int(tokens or 0), int(budget or 0))


@register.filter
def num(value: int | None) -> str:
    """1234567 → 1,234,567 (django.contrib.humanize is not installed)."""
    return f"{int(value or 0):,}"


@register.filter
def days_until(moment: datetime) -> int:
    """Whole days left until `moment` (a record expiring in 89.2 days has 90 days to go: rounded up)."""
    return max(0, math.ceil((moment - timezone.now()).total_seconds() / 86400))


@register.filter
def days_since(moment: datetime) -> int:
    return max(0, math.floor((timezone.now() - moment).total_seconds() / 86400))


@register.filter
def short_hash(value: str) -> str:
    return value[:10]


@register.filter
def job_percent(job) -> int:  # type: ignore[no-untyped-def]
    if job.status == "done":
        return 100
    return fill(job.progress, job.total) if job.total else 0


@register.filter
def highlight(text: str, query: str) -> SafeString:
    """`text` escaped, with the query's words (two characters or more) wrapped in <mark>."""
    words = sorted({w for w in re.split(r"\s+", query or "") if len(w) >= 2}, key=len, reverse=True)
    if not words:
        return conditional_escape(text)
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    out, last = [], 0
    for found in pattern.finditer(text):
        out.append(conditional_escape(text[last : found.start()]))
        out.append(format_html("<mark>{}</mark>", found.group(0)))
        last = found.end()
    out.append(conditional_escape(text[last:]))
    return mark_safe("".join(out))  # noqa: S308 - every piece above is escaped


@register.filter
def ago(moment: datetime | None) -> str:
    """ "just now" under a minute, else Django's timesince with "ago" ("3 days, 2 hours ago")."""
    if moment is None:
        return "never"
    if (timezone.now() - moment).total_seconds() < 60:
        return "just now"
    return f"{timesince(moment)} ago"
