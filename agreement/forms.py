"""Forms of the research pages: every parameter and POST of agreement/views.py is read by one
of these (CONTRIBUTING.md, "Thin views").

The forms spell the pages' rules for their input, not new ones: a query parameter outside its
choices falls back to the page's default (a link never fails), and a decision that cannot be
read is a form error the page shows (``annotation.forms.form_error``). Text is taken as
posted (not stripped, NUL included): the services decide what they store.
"""

from __future__ import annotations

from typing import Any

from django import forms

from agreement.selectors import ANNOTATOR_SORTS, DISAGREEMENT_FILTERS

DEFAULT_SORT = "majority_agreement"
DEFAULT_SHOW = "split"


class RawTextField(forms.Field):
    """Text as posted: ``""`` when absent, never stripped, no character refused."""

    def to_python(self, value: Any) -> str:
        return "" if value is None else str(value)


class AnnotatorOrderForm(forms.Form):
    """The per-annotator table's order: ``sort`` (a key of ``ANNOTATOR_SORTS``, else
    ``majority_agreement``) and ``dir`` (``asc`` or ``desc``, else the column's own order),
    and ``rows`` (``all``, else the first rows only)."""

    sort = RawTextField(required=False)
    dir = RawTextField(required=False)
    #: ``all``: every annotator's row, not the first ``pages.ANNOTATORS_SHOWN``.
    rows = RawTextField(required=False)

    def clean_sort(self) -> str:
        sort = self.data.get("sort", DEFAULT_SORT)
        return sort if sort in ANNOTATOR_SORTS else DEFAULT_SORT

    def clean_dir(self) -> bool | None:
        direction = self.data.get("dir")
        return None if direction not in ("asc", "desc") else direction == "desc"

    def order(self) -> tuple[str, bool | None]:
        """(sort key, descending or None for the column's own order). Never invalid."""
        self.is_valid()
        return self.cleaned_data["sort"], self.cleaned_data["dir"]

    def every_row(self) -> bool:
        """Whether the table lists every annotator (``rows=all``) rather than the first few."""
        return self.data.get("rows") == "all"


class AnnotatorPauseForm(AnnotatorOrderForm):
    """Pause (``paused=1``) or resume an annotator; ``stage`` (a stage slug, optional) is the
    dashboard the request came from, re-rendered in the order it was shown in; ``reason`` is
    kept with the pause."""

    paused = RawTextField(required=False)
    stage = RawTextField(required=False)
    reason = RawTextField(required=False)

    def clean_paused(self) -> bool:
        return self.data.get("paused") == "1"


class DisagreementFilterForm(forms.Form):
    """Which disagreements a list or CSV shows: ``show``, a key of ``DISAGREEMENT_FILTERS``
    (else ``split``)."""

    show = RawTextField(required=False)

    def clean_show(self) -> str:
        show = self.data.get("show", DEFAULT_SHOW)
        return show if show in DISAGREEMENT_FILTERS else DEFAULT_SHOW

    def selected(self) -> str:
        self.is_valid()
        return str(self.cleaned_data["show"])


class KeysetForm(forms.Form):
    """Where a keyset page starts (``annotation.keyset``): ``after`` or ``before``, the cursor
    of the row next to it; a malformed cursor means the first page."""

    after = RawTextField(required=False)
    before = RawTextField(required=False)

    def cursors(self) -> tuple[str | None, str | None]:
        self.is_valid()
        return self.cleaned_data.get("after") or None, self.cleaned_data.get("before") or None


class AdjudicationForm(forms.Form):
    """A reviewer's decision on an item: ``value`` (one of the kind's choices, or a number when
    the kind has none: ``numeric``) and an optional ``reason``. ``cleaned_data["value"]`` is the
    decided value: text as posted (stripped), or an int or float."""

    value = RawTextField(required=False)
    reason = RawTextField(required=False)

    def __init__(self, *args: Any, numeric: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.numeric = numeric

    def clean_value(self) -> Any:
        raw = (self.data.get("value") or "").strip()
        if not raw:
            raise forms.ValidationError("Choose the decided value.", code="required")
        if not self.numeric:
            return raw
        try:
            number = float(raw)
        except ValueError:
            raise forms.ValidationError(
                f"The decision must be a number (got {raw!r}).", code="a number"
            ) from None
        return int(number) if number.is_integer() else number


class SpotCheckForm(AdjudicationForm):
    """A reviewer's spot check: ``verdict`` "confirm" or "overturn"; an overturn also reads
    ``value`` (as ``AdjudicationForm``) and ``reason``. ``cleaned_data["overturn"]`` says which."""

    verdict = RawTextField(required=False)

    def clean_value(self) -> Any:
        if (self.data.get("verdict") or "") != "overturn":
            return None
        return super().clean_value()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        verdict = (self.data.get("verdict") or "").strip()
        if verdict not in ("confirm", "overturn"):
            raise forms.ValidationError("Confirm the decision or overturn it.", code="verdict")
        cleaned["overturn"] = verdict == "overturn"
        return cleaned
