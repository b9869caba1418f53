"""The item page's action form (studio.item_views.item_act): which action, on which stage,
with which value and reason, and the admin's confirmation. Whether the action can work on the
item (its state, the value's choices) is the engine's decision (annotation.api.items_act)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.api import ITEM_ACTIONS
from annotation.forms import TextField, YesNoField


class ItemActionForm(forms.Form):
    """``action`` (one of annotation.api.ITEM_ACTIONS), ``stage`` (a slug, or "" for the
    item's current stage), ``value`` (a hand decision: text as posted, a number when the
    stage's answers are numbers: ``numeric``), ``reason`` and ``confirm`` (ticked)."""

    action = TextField()
    stage = TextField()
    value = TextField()
    reason = TextField()
    confirm = YesNoField()

    def __init__(self, *args: Any, numeric: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.numeric = numeric

    def clean_action(self) -> str:
        action = self.cleaned_data["action"].strip()
        if action not in ITEM_ACTIONS:
            raise forms.ValidationError(
                f"Choose one of the actions: {', '.join(ITEM_ACTIONS.values())}.", code="unknown"
            )
        return action

    def clean_value(self) -> Any:
        raw = self.cleaned_data["value"].strip()
        if not raw or not self.numeric:
            return raw or None
        try:
            number = float(raw)
        except ValueError:
            raise forms.ValidationError(
                f"The decision must be a number (got {raw[:40]!r}).", code="a number"
            ) from None
        return int(number) if number.is_integer() else number

    def clean_confirm(self) -> bool:
        if not self.cleaned_data["confirm"]:
            raise forms.ValidationError(
                "Tick the box to confirm: the action changes the item for everyone.",
                code="required",
            )
        return True


class GoldPromoteForm(forms.Form):
    """The gold page's confirmation (studio.gold_views): the ids of the decisions ticked
    (``resolution``, repeated) and ``confirm`` ticked. Whether each can become gold is the
    engine's decision (annotation.api.gold_promote)."""

    resolution = forms.TypedMultipleChoiceField(coerce=int, required=False)
    confirm = YesNoField()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        posted = self.data.getlist("resolution") if hasattr(self.data, "getlist") else []
        field = self.fields["resolution"]
        assert isinstance(field, forms.TypedMultipleChoiceField)
        field.choices = [(value, value) for value in posted if str(value).isdigit()]

    def clean_resolution(self) -> list[int]:
        chosen = self.cleaned_data["resolution"]
        if not chosen:
            raise forms.ValidationError("Tick at least one decision to make it a gold item.")
        return chosen

    def clean_confirm(self) -> bool:
        if not self.cleaned_data["confirm"]:
            raise forms.ValidationError(
                "Tick the confirmation: these answers become known answers annotators are "
                "checked against."
            )
        return True
