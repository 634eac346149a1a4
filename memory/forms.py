"""Dashboard forms: they validate what a person typed; the services decide what it means."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from ottoweb import parsing

from .engine.types import SESSION_ID, is_blank

MATCHES = [("semantic", "By meaning"), ("keyword", "Exact words")]
KINDS = [("all", "Everything"), ("history", "Conversation"), ("context", "Tool output")]
RESET_MODES = [("summary", "Keep the summary"), ("all", "Wipe everything")]


def _import_limit() -> int:
    return int(getattr(settings, "OTTO_MAX_IMPORT_BYTES", settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


# A search longer than a form takes is not run, and the page says so (it never silently lists all).
TOO_LONG = "Search for at most %(limit_value)d characters (this is %(show_value)d)."


def visible_search(q: str) -> str:
    """A list's search as typed (empty: no search), refused when it holds only invisible characters
    (a zero-width space): it would search for nothing, and the API refuses such a q too."""
    if q and is_blank(q):
        raise forms.ValidationError(
            "The search holds only invisible characters: type words to search for.", code="blank"
        )
    return q


class SessionSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, strip=True, error_messages={"max_length": TOO_LONG})

    def clean_q(self) -> str:
        return visible_search(self.cleaned_data["q"])


class RecallForm(forms.Form):
    q = forms.CharField(
        max_length=2000,
        strip=True,
        label="Search this session",
        error_messages={
            "required": "Type something to search for.",
            "max_length": TOO_LONG,
        },
    )
    match = forms.ChoiceField(choices=MATCHES, initial="semantic", required=False)
    kind = forms.ChoiceField(choices=KINDS, initial="all", required=False)

    def clean_q(self) -> str:
        # Text of only invisible characters (a zero-width space, a BOM) is empty, as the API holds it.
        q: str = self.cleaned_data["q"]
        if is_blank(q):
            raise forms.ValidationError("Type something to search for.", code="required")
        return q

    def clean_match(self) -> str:
        return self.cleaned_data.get("match") or "semantic"

    def clean_kind(self) -> str:
        return self.cleaned_data.get("kind") or "all"


class ResetForm(forms.Form):
    mode = forms.ChoiceField(choices=RESET_MODES)


class ImportForm(forms.Form):
    file = forms.FileField(label="Session file (.json)")
    sid = forms.CharField(
        required=False,
        max_length=128,
        strip=True,
        label="Session id (optional)",
        help_text="Leave empty to keep the id in the file.",
    )

    def clean_sid(self) -> str | None:
        sid = self.cleaned_data.get("sid") or None
        if sid is not None and not SESSION_ID.match(sid):
            raise forms.ValidationError("Use 1-128 letters, digits, '.', '_', ':' or '-'.", code="invalid_id")
        return sid

    def clean_file(self) -> dict[str, Any]:
        upload = self.cleaned_data["file"]
        if upload.size > _import_limit():
            limit = _import_limit()
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {limit:,}.", code="too_large"
            )
        try:
            # Read as the API's import reads a document (a byte-order mark, UTF-16), in its words.
            document = parsing.read_json(upload.read())
        except parsing.TooDeep as exc:
            raise forms.ValidationError(f"The file is refused: {exc}.", code="too_deep") from None
        except parsing.TooLong as exc:
            raise forms.ValidationError(f"The file is refused: {exc}.", code="too_long") from None
        except parsing.NotJson as exc:
            raise forms.ValidationError(f"The file {exc}.", code="not_json") from None
        if not isinstance(document, dict):
            raise forms.ValidationError("The file must hold one JSON object (a session document).")
        return document
