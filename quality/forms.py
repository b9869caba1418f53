"""Forms of the quality page: every POST of quality/views.py is read by one of these
(CONTRIBUTING.md, "Thin views"); yes / no values by the one rule (``YesNoField``)."""

from __future__ import annotations

from django import forms

from annotation.forms import YesNoField


class RuleForm(forms.Form):
    """A stage's thresholds: whether it acts, the gold answers before acting, the accuracy
    bound in percent, and whether acting withdraws the person's earlier work."""

    acts = YesNoField()
    min_gold = forms.IntegerField(
        min_value=1,
        max_value=1000,
        error_messages={"min_value": "Ask for at least one gold answer before acting."},
    )
    min_accuracy = forms.IntegerField(
        min_value=0,
        max_value=100,
        error_messages={"max_value": "The accuracy bound is a percentage: 0 to 100."},
    )
    withdraw = YesNoField()


class ActionForm(forms.Form):
    """An action of the page's stage: ``action`` (its id)."""

    action = forms.IntegerField(min_value=1)


class TakeForm(forms.Form):
    """Pause someone on the stage by hand: ``annotator`` (a user id) and a ``reason``."""

    annotator = forms.IntegerField(min_value=1)
    reason = forms.CharField(required=False, max_length=300, strip=False)
