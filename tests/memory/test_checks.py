"""memory/checks.py: the system checks `make run` and `manage.py check` fail on."""

from __future__ import annotations

from django.test import override_settings

from memory.checks import recall_rules_known


def test_a_recall_rule_switched_off_must_exist():
    assert recall_rules_known(None) == []
    with override_settings(OTTO_RECALL_RULES_OFF=["expansion", "feedbak"]):
        errors = recall_rules_known(None)
    assert [e.id for e in errors] == ["memory.E003"]
    assert "feedbak" in errors[0].msg and "feedback" in errors[0].msg  # the typo, and the rules there are
