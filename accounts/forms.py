"""The accounts' forms: they validate what a person typed; the services decide what it means."""

from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True, label="Token name")
