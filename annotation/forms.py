"""What every app's HTML forms share (CONTRIBUTING.md, "Thin views"): the one rule for reading
a yes / no value, form fields that keep the messages the services give, and the step from an
invalid form to the one error type.

- ``parse_bool``: the one word list for "yes" and "no" (checkboxes send ``on``, selects ``1`` /
  ``0``, scripts ``true`` / ``false``, people ``yes`` / ``no``). Forms read it through
  ``YesNoField``; code that reads such a text outside a form (a setting, a payload) calls it.
- ``TextField``: text as posted, for the services to judge.
- ``WholeNumberField``: a whole number within bounds, a default when the field was not posted
  at all (an empty field is an error, as a typed "x" is).
- ``form_error``: an invalid form as ``ApplicationError`` naming its first field, so pages show
  it where they show any other refusal (``extra`` holds the field's name).
"""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.errors import ApplicationError

#: Texts read as yes (case and surrounding spaces ignored).
TRUE_WORDS = frozenset({"1", "true", "on", "yes"})
#: Texts read as no; a missing field is no too.
FALSE_WORDS = frozenset({"", "0", "false", "off", "no"})


def parse_bool(value: Any) -> bool:
    """A text: True for a yes (``TRUE_WORDS``), False for anything else (a no, an unknown
    word; ``YesNoField`` refuses unknown words instead). None: False. Any other value (a JSON
    number, a bool): its truth value."""
    if isinstance(value, str):
        return value.strip().lower() in TRUE_WORDS
    return bool(value)


class YesNoField(forms.Field):
    """A yes / no field read by ``parse_bool``'s word lists; a word in neither is a form error.
    Not posted: ``default``."""

    widget = forms.TextInput

    def __init__(self, *, default: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.default = default

    def to_python(self, value: Any) -> bool:
        if value is None:
            return self.default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
        raise forms.ValidationError(
            f"{self.label or 'This field'} takes yes or no (1 / 0).", code="invalid"
        )


class TextField(forms.Field):
    """Text as posted ("" when not posted), not stripped and not judged: what may be stored
    (no NUL, no unpaired surrogate, a length) is the services' rule
    (``annotation.inputs``), whose messages name the field."""

    widget = forms.TextInput

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> str:
        return "" if value is None else str(value)


class WholeNumberField(forms.Field):
    """A whole number from ``low`` to ``high``; ``default`` when the field was not posted.
    Messages name the field as the services do ("overlap must be from 1 to 100.")."""

    widget = forms.TextInput

    def __init__(self, name: str, low: int, high: int, *, default: int | None = None) -> None:
        super().__init__(required=False)
        self.name, self.low, self.high, self.default = name, low, high, default

    def to_python(self, value: Any) -> int | None:
        if value is None:
            return self.default
        try:
            number = int(str(value).strip())
        except ValueError:
            raise forms.ValidationError(
                f"{self.name} must be a whole number.", code="invalid"
            ) from None
        if not self.low <= number <= self.high:
            raise forms.ValidationError(
                f"{self.name} must be from {self.low} to {self.high}.", code="range"
            )
        return number


def form_error(form: forms.BaseForm, *, status: int = 400) -> ApplicationError:
    """The first error of an invalid ``form`` as an ApplicationError whose ``extra`` names the
    field (fields in their declared order, then ``__all__`` for the form's own). A form whose
    ``clean`` caught an ApplicationError from a shared check keeps it in
    ``form.application_error``; that one is returned whole (message, ``extra``, status)."""
    cause = getattr(form, "application_error", None)
    if isinstance(cause, ApplicationError):
        return cause
    for name, found in form.errors.as_data().items():
        for error in found:
            message = " ".join(error.messages)
            return ApplicationError(message, {name: error.code or "invalid"}, status=status)
    return ApplicationError("The form is not valid.", status=status)
