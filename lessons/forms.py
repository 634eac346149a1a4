"""Dashboard forms for error memory: validation of what a person typed, nothing more."""

from __future__ import annotations

from django import forms

MATCHES = [("semantic", "By meaning"), ("keyword", "Exact words")]


class LessonSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=2000, strip=True, label="Search")
    tool = forms.CharField(required=False, max_length=200, strip=True, label="Tool")
    match = forms.ChoiceField(choices=MATCHES, required=False)

    def clean_match(self) -> str:
        return self.cleaned_data.get("match") or "semantic"


class LessonFixForm(forms.Form):
    action = forms.CharField(
        label="Fix", max_length=100_000, strip=True, widget=forms.Textarea(attrs={"rows": 4})
    )
