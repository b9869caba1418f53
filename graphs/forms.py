"""The Graphs tab's one POST, read by a form (CONTRIBUTING.md, "Thin views"): an uploaded edge
list and the generator's settings, each number in its range, a refusal naming the field."""

from __future__ import annotations

from typing import Any

from django import forms

from graphs import services


class _WholeNumber(forms.Field):
    """A whole number from ``low`` to ``high``; empty or absent gives ``default``."""

    def __init__(self, *, low: int, high: int, default: int, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)
        self.low, self.high, self.default = low, high, default

    def clean(self, value: Any) -> int:
        if value in (None, ""):
            return self.default
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = None
        if number is None or not self.low <= number <= self.high:
            raise forms.ValidationError(
                f"%(name)s is a whole number from {self.low} to {self.high} "
                f"(got {str(value)[:20]!r}).",
                code=f"{self.low}–{self.high}",
                params={"name": self.label},
            )
        return number


class DsepGenerateForm(forms.Form):
    """``file`` (an edge list: CSV cause,effect or JSON, at most
    ``services.MAX_EDGE_LIST_BYTES``), ``graph_name``, ``max_given``, ``limit`` and ``seed``."""

    file = forms.FileField(
        required=False,
        error_messages={"invalid": "Choose an edge list (CSV cause,effect or JSON)."},
    )
    graph_name = forms.CharField(required=False, strip=True)
    max_given = _WholeNumber(label="max_given", low=0, high=services.MAX_GIVEN, default=1)
    limit = _WholeNumber(label="limit", low=1, high=services.MAX_QUESTIONS, default=20)
    seed = _WholeNumber(label="seed", low=0, high=2**31, default=0)

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        if upload is None:
            raise forms.ValidationError(
                "Choose an edge list (CSV cause,effect or JSON).", code="required"
            )
        if upload.size > services.MAX_EDGE_LIST_BYTES:
            raise forms.ValidationError(
                f"An edge list is at most {services.MAX_EDGE_LIST_BYTES >> 20} MiB.",
                code=upload.name,
            )
        return upload


class QuestionFilterForm(forms.Form):
    """The per-question page's query: which task (``graphs.questions.TASK_FILTERS``); anything
    else shows every task."""

    task = forms.CharField(required=False)

    def selected(self) -> str:
        from graphs.questions import TASK_FILTERS

        task = self.cleaned_data.get("task") if self.is_valid() else ""
        return task if task in TASK_FILTERS else "all"


#: The largest questions file the Import page takes (CARL-GT's whole question set is ~2 MiB).
MAX_QUESTIONS_FILE_BYTES = 32 << 20


class QuestionsImportForm(forms.Form):
    """The Import page's upload: ``file``, a CSV, JSON Lines or JSON file of questions
    (``graphs.carlgt.QUESTION_SCHEMA``) of at most ``MAX_QUESTIONS_FILE_BYTES``."""

    file = forms.FileField(
        required=False,
        error_messages={"invalid": "Choose a questions file (CSV, JSON Lines or JSON)."},
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        if upload is None:
            raise forms.ValidationError(
                "Choose a questions file (CSV, JSON Lines or JSON).", code="required"
            )
        if upload.size > MAX_QUESTIONS_FILE_BYTES:
            raise forms.ValidationError(
                f"A questions file is at most {MAX_QUESTIONS_FILE_BYTES >> 20} MiB.",
                code=upload.name,
            )
        return upload
