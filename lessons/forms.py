"""Dashboard forms for error memory: validation of what a person typed, nothing more."""

from __future__ import annotations

from django import forms

from memory.forms import TOO_LONG, visible_search

MATCHES = [("semantic", "By meaning"), ("keyword", "Exact words")]


class LessonSearchForm(forms.Form):
    q = forms.CharField(
        required=False, max_length=2000, strip=True, label="Search", error_messages={"max_length": TOO_LONG}
    )
    tool = forms.CharField(
        required=False,
        max_length=200,
        strip=True,
        label="Tool",
        error_messages={
            "max_length": "Name a tool in at most %(limit_value)d characters (this is %(show_value)d)."
        },
    )
    match = forms.ChoiceField(choices=MATCHES, required=False)

    def clean_q(self) -> str:
        return visible_search(self.cleaned_data["q"])

    def clean_match(self) -> str:
        return self.cleaned_data.get("match") or "semantic"


class LessonFixForm(forms.Form):
    action = forms.CharField(
        label="Fix", max_length=100_000, strip=True, widget=forms.Textarea(attrs={"rows": 4})
    )
