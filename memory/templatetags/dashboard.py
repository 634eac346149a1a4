"""Small template filters for the dashboard: fills, day counts, short hashes, when a turn was said.

The filters on when a turn was said take its time as sent (`Item.when`, in its own offset) and
deliberately do not ask Django to convert it to the server's time zone (no `expects_localtime`):
Ana's 13:56 in Lisbon stays 13:56."""

from __future__ import annotations

import math
import re
from datetime import date, datetime

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
def job_percent(job) -> int:
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


@register.filter
def iso(moment: datetime | None) -> str:
    """ISO 8601 in the moment's own offset, for `<time datetime>`: 2023-05-08T13:56:00+01:00."""
    return moment.isoformat(timespec="seconds") if moment else ""


@register.filter
def said_at(moment: datetime | None) -> str:
    """A turn's time, compact, in the offset it was sent with: 8 May 2023, 13:56."""
    return f"{moment.day} {moment:%b %Y, %H:%M}" if moment else ""


@register.filter
def utc_offset(moment: datetime | None) -> str:
    """The moment's offset from UTC: UTC+01:00, UTC-04:30, UTC."""
    if moment is None or not moment.utcoffset():
        return "UTC"
    return "UTC" + moment.isoformat()[-6:]


def _day(d: date, *, month: bool = True, year: bool = True) -> str:
    return f"{d.day}{f' {d:%b}' if month else ''}{f' {d.year}' if year else ''}"


@register.simple_tag
def days(first: datetime | None, last: datetime | None) -> SafeString:
    """The day of `first`, or the days from `first` to `last` when they differ (each in its own
    offset), as `<time>` elements: 8 May 2023, 8–12 May 2023, 30 Apr – 2 May 2023."""
    if first is None:
        return SafeString("")
    a = first.date()
    b = last.date() if last is not None else a
    if a == b:
        return format_html('<time datetime="{}">{}</time>', a.isoformat(), _day(a))
    same_year = a.year == b.year
    same_month = same_year and a.month == b.month
    return format_html(
        '<time datetime="{}">{}</time>{}<time datetime="{}">{}</time>',
        a.isoformat(),
        _day(a, month=not same_month, year=not same_year),
        "–" if same_month else " – ",
        b.isoformat(),
        _day(b),
    )
