"""A password check Django's four leave out: enough different characters."""

from __future__ import annotations

from django.core.exceptions import ValidationError

# "aaaaaaaaaaaa" and "abababababab" are long, not common words, not numeric: Django's validators
# let them through. Twelve letters drawn from five or more characters are a different matter.
MIN_DISTINCT = 5


class VarietyValidator:
    """Refuse a password made of fewer than `min_distinct` different characters."""

    def __init__(self, min_distinct: int = MIN_DISTINCT) -> None:
        self.min_distinct = min_distinct

    def validate(self, password: str, user: object = None) -> None:
        if len(set(password)) < self.min_distinct:
            raise ValidationError(
                f"This password uses fewer than {self.min_distinct} different characters.",
                code="password_too_repetitive",
            )

    def get_help_text(self) -> str:
        return f"Your password must use at least {self.min_distinct} different characters."
