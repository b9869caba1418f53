"""The crowd pages' forms (CONTRIBUTING.md, "Thin views"): every POST of the crowd app is read
by one of these, and the services get typed values. Whether a value can work (a range, a
platform, a required text, a participant of the study) stays the services' decision; a form
turns posted text into types and refuses what has none (``annotation.forms.form_error``).
"""

from __future__ import annotations

from typing import Any, cast

from django import forms

from annotation.errors import ApplicationError
from annotation.forms import TextField, YesNoField
from crowd.services import INT_FIELDS, STUDY_STAGES, TEXT_FIELDS, study_fields_check
from crowd.services.studies import StudySettings

#: The largest bonus CSV accepted from the study page.
BONUS_CSV_MAX_BYTES = 1 << 20


class WholeField(forms.Field):
    """A whole number, its range left to the service ("places must be a whole number.")."""

    widget = forms.TextInput

    def __init__(self, name: str) -> None:
        super().__init__(required=False)
        self.name = name

    def to_python(self, value: Any) -> int | None:
        if value is None:
            return None
        try:
            return int(str(value).strip())
        except ValueError:
            raise forms.ValidationError(f"{self.name} must be a whole number.") from None


class StudyForm(forms.Form):
    """A study's settings from the Crowd tab (creating: with its stages). Only the posted
    settings go on (``settings()``): the study page edits some of them at a time. A posted
    field that is no study setting is refused naming it (``services.study_fields_check``),
    so that nothing posted is silently dropped."""

    stage = TextField()
    practice_stage = TextField()
    too_fast_seconds = TextField()
    platform = TextField()
    practice_rule = TextField()
    on_return = TextField()
    is_open = YesNoField(label="is_open")
    signed_links = YesNoField(label="signed_links")

    def __init__(self, data: Any, *, creating: bool) -> None:
        super().__init__(data)
        self.creating = creating
        self.application_error: ApplicationError | None = None
        for name in TEXT_FIELDS:
            self.fields[name] = TextField()
        for name in INT_FIELDS:
            self.fields[name] = WholeField(name)

    def posted(self) -> list[str]:
        return [name for name in self.data if name != "csrfmiddlewaretoken"]

    def clean_too_fast_seconds(self) -> float | None:
        if "too_fast_seconds" not in self.data:
            return None
        try:
            return float(str(self.cleaned_data["too_fast_seconds"]).strip())
        except ValueError:
            raise forms.ValidationError(
                "too_fast_seconds must be between 0 and 3600.", code="invalid"
            ) from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        try:
            study_fields_check(self.posted(), creating=self.creating)
        except ApplicationError as error:
            self.application_error = error
            raise forms.ValidationError(error.message) from None
        return cleaned

    def stages(self) -> dict[str, str | None]:
        """The stages chosen for a new study (their ids as posted; the service finds them)."""
        return {
            "stage": self.cleaned_data["stage"],
            "practice_stage": self.cleaned_data["practice_stage"] or None,
        }

    def settings(self) -> StudySettings:
        """The posted settings, typed, for ``study_create`` / ``study_update``."""
        found = {
            name: self.cleaned_data[name]
            for name in self.posted()
            if name in self.fields and name not in STUDY_STAGES
        }
        return cast(StudySettings, found)


class ConsentForm(forms.Form):
    """Accept or decline: only the decline button declines (Enter in the form, which names
    no button, accepts), and accepting needs the box ticked."""

    decision = TextField()
    agree = YesNoField(label="agree")

    def __init__(self, data: Any) -> None:
        super().__init__(data)
        self.application_error: ApplicationError | None = None

    def accepted(self) -> bool:
        return self.cleaned_data["decision"] != "decline"

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") != "decline" and not cleaned.get("agree"):
            self.application_error = ApplicationError(
                "Tick the box to say you agree, or decline.", {"agree": "required"}
            )
            raise forms.ValidationError(self.application_error.message)
        return cleaned


class SwitchForm(forms.Form):
    """The question to someone signed in with an account of their own: continue as a study
    participant (``decision`` "participant"), which signs them out."""

    decision = TextField()

    def as_participant(self) -> bool:
        return self.is_valid() and self.cleaned_data["decision"] == "participant"


class DecideForm(forms.Form):
    """The rejection message sent with the suggested rejections (empty: the page's default)."""

    message = TextField()


class BonusForm(forms.Form):
    """Bonuses typed in the participant table (``bonus-<participant id>``), a CSV typed in
    ``bonus_csv`` and one uploaded as ``bonus_file`` (UTF-8, at most ``BONUS_CSV_MAX_BYTES``):
    ``amounts()`` and ``csv_text()`` for ``services.bonus_payment_create``."""

    bonus_csv = TextField()
    bonus_file = forms.FileField(required=False, allow_empty_file=True)

    def __init__(self, data: Any, files: Any) -> None:
        super().__init__(data, files)
        self.application_error: ApplicationError | None = None

    def clean_bonus_file(self) -> str | None:
        """The uploaded CSV's text; None when no file was sent."""
        upload = self.files.get("bonus_file")
        if upload is None:
            return None
        if (upload.size or 0) > BONUS_CSV_MAX_BYTES:
            self.application_error = ApplicationError(
                "The bonus CSV is larger than 1 MiB.", {"bonus_file": "size"}
            )
            raise forms.ValidationError(self.application_error.message)
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            self.application_error = ApplicationError(
                "The bonus CSV is not UTF-8 text.", {"bonus_file": "encoding"}
            )
            raise forms.ValidationError(self.application_error.message) from None

    def amounts(self) -> dict[str, str]:
        """The amounts typed per participant, by the participant id the field names (as posted;
        the service refuses ids that are no participant of the study)."""
        return {
            key.removeprefix("bonus-"): str(value)
            for key, value in self.data.items()
            if key.startswith("bonus-")
        }

    def csv_text(self) -> str:
        """The uploaded CSV's lines, then the typed ones."""
        uploaded = self.cleaned_data["bonus_file"]
        typed = self.cleaned_data["bonus_csv"]
        return typed if uploaded is None else uploaded + "\n" + typed
