"""The upload form of the interop page (CONTRIBUTING.md, "Thin views": the form parses, the
service decides)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import Stage
from interop.uploads import TOOLS

#: The largest upload read (a Label Studio export or a zipped Potato folder).
MAX_UPLOAD = 100 * 1024 * 1024


class InteropImportForm(forms.Form):
    tool = forms.ChoiceField(label="Exported from", choices=list(TOOLS.items()))
    stage = forms.TypedChoiceField(label="Answers go into", coerce=int)
    field = forms.CharField(
        label="Field",
        required=False,
        max_length=200,
        help_text="Label Studio's control name (from_name) or Potato's scheme name; leave empty "
        "when the export answers one.",
    )
    file = forms.FileField(
        label="Export",
        help_text="Label Studio: the JSON export. Potato: the task folder zipped (its config, "
        "data files and annotation_output).",
    )

    def __init__(self, *args: Any, stages: list[Stage], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        stage_field = self.fields["stage"]
        assert isinstance(stage_field, forms.TypedChoiceField)
        stage_field.choices = [(stage.pk, stage.name) for stage in stages]

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD:
            raise forms.ValidationError(
                f"The file is {upload.size // 2**20} MB; at most {MAX_UPLOAD // 2**20} MB.",
                code="too_large",
            )
        return upload

    def files_read(self) -> dict[str, bytes]:
        upload = self.cleaned_data["file"]
        return {upload.name: upload.read()}
