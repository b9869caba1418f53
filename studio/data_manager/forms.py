"""The data manager's query string parsed into a typed ``ItemQuery``, and its bulk-action form.

Every filter is optional; an unknown stage, state, status, sort or a malformed cursor is a 400
with a message naming the field (``annotation.forms.form_error``). The same parameters drive
the page, the bulk actions over "all matching" and the exports, so all three see one set."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from django import forms
from django.http import QueryDict

from annotation.api import ITEM_ACTIONS
from annotation.forms import form_error
from annotation.models import Item, ItemStage

MAX_QUERY = 200
#: Sort keys of the table: key -> (model field, descending). Each is served by an index
#: (annotation/migrations/*_data_manager_indexes.py); ties are broken by id in the same
#: direction, so the order is total and keyset pages neither skip nor repeat a row.
SORTS = {
    "newest": ("pk", True),
    "oldest": ("pk", False),
    "id": ("external_id", False),
    "-id": ("external_id", True),
    "status": ("status", False),
    "-status": ("status", True),
}
SORT_LABELS = {
    "newest": "Newest first",
    "oldest": "Oldest first",
    "id": "Item id A→Z",
    "-id": "Item id Z→A",
    "status": "Status A→Z",
    "-status": "Status Z→A",
}
#: The query-string names of the filters (the page's links and hidden fields repeat them).
FILTER_NAMES = (
    "q",
    "stage",
    "state",
    "status",
    "decision",
    "disagreement",
    "annotator",
    "batch",
    "tag",
    "sort",
)


@dataclass(frozen=True)
class ItemQuery:
    """Which items, in which order, from where: the data manager's one input."""

    q: str = ""
    stage: str = ""
    state: str = ""
    status: str = ""
    decision: str = ""
    disagreement: bool = False
    annotator: str = ""
    batch: int | None = None
    tag: str = ""
    sort: str = "newest"
    after: tuple[Any, int] | None = None

    @property
    def filtered(self) -> bool:
        """Whether any filter (not the sort) narrows the items."""
        return any(
            (
                self.q,
                self.stage,
                self.state,
                self.status,
                self.decision,
                self.disagreement,
                self.annotator,
                self.batch,
                self.tag,
            )
        )

    def params(self) -> dict[str, str]:
        """The filters and sort as query-string parameters (no cursor), empty ones left out."""
        values = {
            "q": self.q,
            "stage": self.stage,
            "state": self.state,
            "status": self.status,
            "decision": self.decision,
            "disagreement": "1" if self.disagreement else "",
            "annotator": self.annotator,
            "batch": str(self.batch) if self.batch else "",
            "tag": self.tag,
            "sort": "" if self.sort == "newest" else self.sort,
        }
        return {key: value for key, value in values.items() if value}


def cursor_encode(value: Any, pk: int) -> str:
    """The ``after`` parameter of the page after a row whose sort value is ``value``."""
    return base64.urlsafe_b64encode(json.dumps([value, pk]).encode()).decode().rstrip("=")


def cursor_decode(text: str) -> tuple[Any, int]:
    """A cursor back to (sort value, id); ValueError when it is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        value, pk = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as error:
        raise ValueError("malformed cursor") from error
    if not isinstance(pk, int) or isinstance(pk, bool) or not isinstance(value, (str, int)):
        raise ValueError("malformed cursor")
    return value, pk


class ItemQueryForm(forms.Form):
    """The query string of the Items tab, its bulk actions and exports."""

    q = forms.CharField(required=False, max_length=MAX_QUERY, strip=True)
    stage = forms.SlugField(required=False)
    state = forms.ChoiceField(required=False, choices=[("", "Any"), *ItemStage.State.choices])
    status = forms.ChoiceField(required=False, choices=[("", "Any"), *Item.Status.choices])
    decision = forms.CharField(required=False, max_length=MAX_QUERY, strip=True)
    disagreement = forms.BooleanField(required=False)
    annotator = forms.CharField(required=False, max_length=150, strip=True)
    batch = forms.IntegerField(required=False, min_value=1)
    tag = forms.CharField(required=False, max_length=60, strip=True)
    sort = forms.ChoiceField(required=False, choices=list(SORT_LABELS.items()))
    after = forms.CharField(required=False, max_length=2000)

    def clean_after(self) -> tuple[Any, int] | None:
        text = self.cleaned_data["after"]
        if not text:
            return None
        try:
            return cursor_decode(text)
        except ValueError:
            raise forms.ValidationError(
                "This page link is broken; start again from the first page."
            ) from None


def item_query(data: QueryDict | dict[str, Any]) -> ItemQuery:
    """The ``ItemQuery`` a query string asks for; an ApplicationError (400) naming the field
    when a value is not one the form accepts."""
    form = ItemQueryForm(data)
    if not form.is_valid():
        raise form_error(form)
    cleaned: dict[str, Any] = form.cleaned_data
    return ItemQuery(
        q=cleaned["q"],
        stage=cleaned["stage"],
        state=cleaned["state"],
        status=cleaned["status"],
        decision=cleaned["decision"],
        disagreement=cleaned["disagreement"],
        annotator=cleaned["annotator"],
        batch=cleaned["batch"],
        tag=cleaned["tag"],
        sort=cleaned["sort"] or "newest",
        after=cleaned["after"],
    )


#: Bulk actions on tags (this app's), then the engine's item actions (annotation.api.items_act).
TAG_ACTIONS = {"tag_add": "Add the tag", "tag_remove": "Remove the tag"}
BULK_ACTIONS = {**TAG_ACTIONS, **ITEM_ACTIONS}


class BulkForm(forms.Form):
    """A bulk action: on the ticked ``items`` (ids) or, with ``scope`` "all", on every item
    matching the query string sent beside it."""

    action = forms.ChoiceField(choices=list(BULK_ACTIONS.items()))
    scope = forms.ChoiceField(
        choices=[("selected", "The ticked items"), ("all", "All items matching")],
        initial="selected",
    )
    items = forms.TypedMultipleChoiceField(coerce=int, required=False, choices=[])
    tag_name = forms.CharField(required=False, max_length=60, strip=True, label="Tag")
    reason = forms.CharField(required=False, max_length=500, strip=True)
    # Not "stage": the filters sent beside the form use that name.
    target_stage = forms.SlugField(required=False, label="Stage")
    value = forms.CharField(required=False, max_length=200, strip=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Any ids are accepted here; the service keeps only the project's own.
        items = self.fields["items"]
        assert isinstance(items, forms.TypedMultipleChoiceField)
        items.valid_value = lambda value: str(value).isdigit()  # type: ignore[method-assign]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("scope") == "selected" and not data.get("items"):
            raise forms.ValidationError("Tick at least one item, or choose all matching items.")
        if str(data.get("action", "")).startswith("tag_") and not data.get("tag_name"):
            self.add_error("tag_name", "Name the tag.")
        return data
