"""The Items tab (the data manager): the table, its column chooser, bulk actions and exports.

Admins, researchers and reviewers open it (``studio.access.access_project_items``); bulk
actions are the admins' (``studio.access.access_project_setup``). The page, the bulk actions
over "all matching" and the exports parse one query string (``forms.item_query``) and read one
selector (``selectors.items_matching``), so an export holds exactly the rows the page pages
through."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.contrib import messages
from django.http import HttpResponseBase, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from annotation.access import ProjectAccess
from annotation.api import items_act
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.models import Item, ItemStage, Project
from annotation.navigation import project_tabs
from annotation.web import PageRequest, csv_response, csv_timestamp, page
from rungwise.replica import reads_from_replica
from studio.access import access_project_items, access_project_setup
from studio.data_manager import forms, selectors, services
from studio.data_manager.columns import Column

EXPORT_FORMATS = ("csv", "jsonl")


def _items_url(slug: str, params: dict[str, str]) -> str:
    url = reverse("studio:items", args=[slug])
    return f"{url}?{urlencode(params)}" if params else url


@require_GET
@page
@reads_from_replica
def items(request: PageRequest, slug: str) -> HttpResponseBase:
    """The table of the project's items: the chosen columns, filters, a sort, 50 a page by
    keyset (``after``), the count matching, and (admins) the bulk-action form."""
    access = access_project_items(request.user, slug)
    return _items_page(request, access, forms.item_query(request.GET))


def _items_page(
    request: PageRequest,
    access: ProjectAccess,
    query: forms.ItemQuery,
    *,
    bulk_error: str = "",
    bulk_data: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponseBase:
    """The Items page for ``query``; a refused bulk action shows ``bulk_error`` at the top of
    the bulk form with what was sent (``bulk_data``)."""
    project = access.project
    slug = project.slug
    named = access.sees_annotators
    stages, offered = selectors.project_columns(project, named=named)
    columns = selectors.chosen_columns(project, request.user, stages, offered)
    shown = selectors.items_shown(project, query, viewer=request.user, named=named)
    next_cursor = shown.next_cursor
    rows = [
        (item, [selectors.display(value) for value in cells])
        for item, cells in selectors.item_rows(shown.items, [column.key for column in columns])
    ]
    params = query.params()
    return render(
        request,
        "studio/items.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, access.roles),
            "query": query,
            "params": params,
            "hidden_params": list(params.items()),
            "rows": rows,
            "columns": columns,
            "offered": offered,
            "chosen_keys": {column.key for column in columns},
            "matching": shown.matching,
            "more": shown.more,
            "search_waiting": shown.search_waiting,
            "search_waiting_more": shown.search_waiting_more,
            "next_url": _items_url(slug, {**params, "after": next_cursor}) if next_cursor else "",
            "first_url": _items_url(slug, params) if query.after else "",
            "stages": stages,
            "states": ItemStage.State.choices,
            "statuses": Item.Status.choices,
            "sorts": forms.SORT_LABELS.items(),
            "batches": selectors.project_batches(project),
            "tags": selectors.project_tags(project),
            "named": named,
            "can_act": access.is_admin,
            "actions": forms.BULK_ACTIONS.items(),
            "bulk_error": bulk_error,
            "bulk_data": bulk_data or {},
            "export_csv": _export_url(slug, params, "csv"),
            "export_jsonl": _export_url(slug, params, "jsonl"),
        },
        status=status,
    )


def _export_url(slug: str, params: dict[str, str], fmt: str) -> str:
    return f"{reverse('studio:items_export', args=[slug])}?{urlencode({**params, 'format': fmt})}"


@require_POST
@page
def items_columns(request: PageRequest, slug: str) -> HttpResponseBase:
    """Remember the ticked columns for this member and project, then show the table again
    (with the filters it had: ``next`` is its query string)."""
    # The member's own view of the table, not the project's data: saved on archived ones too.
    access = access_project_items(request.user, slug, while_archived=True)
    _, offered = selectors.project_columns(access.project, named=access.sees_annotators)
    services.item_columns_save(
        project=access.project,
        user=request.user,
        columns=request.POST.getlist("columns"),
        offered=[column.key for column in offered],
    )
    query = forms.item_query(request.POST)
    messages.success(request, "Columns saved.")
    return redirect(_items_url(slug, query.params()))


@require_POST
@page
def items_bulk(request: PageRequest, slug: str) -> HttpResponseBase:
    """A bulk action on the ticked items, or on all items matching the filters sent beside
    it (read in batches by keyset, oldest first: ids do not change, so an item the action
    moves out of the filter is neither skipped nor met twice). Admins only. A refused action
    shows its reason at the top of the bulk form."""
    access = access_project_setup(request.user, slug)
    project = access.project
    query = forms.item_query(request.POST)
    form = forms.BulkForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        if data["scope"] == "all":
            batches: Any = (
                [item.pk for item in batch]
                for batch in selectors.items_in_batches(
                    project,
                    forms.ItemQuery(**{**query.__dict__, "sort": "oldest", "after": None}),
                    viewer=request.user,
                    named=True,
                )
            )
        else:
            batches = [data["items"]]
        message = _bulk_apply(project, batches, data, by=request.user)
    except ApplicationError as error:
        return _items_page(
            request,
            access,
            query,
            bulk_error=error.message,
            bulk_data=request.POST.dict(),
            status=error.status,
        )
    messages.success(request, message)
    return redirect(_items_url(slug, query.params()))


def _bulk_apply(
    project: Project, batches: Iterable[list[int]], data: dict[str, Any], *, by: Any
) -> str:
    """Apply a valid bulk form's action to each batch of item ids: a tag (``services``) or
    an item action (``annotation.api.items_act``, which records each in the item's history);
    what was done, in words."""
    action = data["action"]
    if action in forms.TAG_ACTIONS:
        changed = 0
        for ids in batches:
            changed += services.items_tag(
                project=project, item_ids=ids, name=data["tag_name"], add=action == "tag_add"
            )
        verb = "tagged" if action == "tag_add" else "untagged"
        return f"{changed} item{'s' if changed != 1 else ''} {verb} “{data['tag_name']}”."
    done, refused = 0, {}
    for ids in batches:
        report = items_act(
            project,
            ids,
            action,
            by=by,
            reason=data["reason"],
            stage=data["target_stage"] or None,
            value=selectors.typed_value(data["value"]) if data["value"] else None,
        )
        done += len(report.done)
        refused.update(report.refused)
    message = f"{forms.BULK_ACTIONS[action]}: {done} item{'s' if done != 1 else ''} done."
    if refused:
        first = next(iter(refused.values()))
        message += f" {len(refused)} refused (for example: {first})"
    return message


@require_GET
@page
def items_export(request: PageRequest, slug: str) -> HttpResponseBase:
    """The filtered view as a download, every matching row (not one page) in the table's order
    with the chosen columns: ``format`` csv (spreadsheet-safe, annotation/web.py) or jsonl.
    Streamed, read in batches by keyset."""
    access = access_project_items(request.user, slug)
    project = access.project
    fmt = request.GET.get("format", "csv")
    if fmt not in EXPORT_FORMATS:
        raise ApplicationError("Choose csv or jsonl.", {"field": "format"})
    query = forms.item_query(request.GET)
    named = access.sees_annotators
    stages, offered = selectors.project_columns(project, named=named)
    columns = selectors.chosen_columns(project, request.user, stages, offered)
    keys = [column.key for column in columns]
    batches = selectors.items_in_batches(project, query, viewer=request.user, named=named)
    filename = f"{project.slug}-items.{fmt}"
    if fmt == "csv":
        return csv_response(
            filename, ["item id", *(column.heading for column in columns)], _csv_rows(batches, keys)
        )
    response = StreamingHttpResponse(
        _jsonl_lines(batches, columns), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _csv_rows(batches: Iterator[list[Item]], keys: list[str]) -> Iterator[list[Any]]:
    for batch in batches:
        for item, cells in selectors.item_rows(batch, keys):
            yield [item.external_id, *(selectors.display(value) for value in cells)]


def _jsonl_lines(batches: Iterator[list[Item]], columns: list[Column]) -> Iterator[str]:
    for batch in batches:
        for item, cells in selectors.item_rows(batch, [column.key for column in columns]):
            row: dict[str, Any] = {"id": item.external_id}
            for column, value in zip(columns, cells, strict=True):
                row[column.key] = csv_timestamp(value) if hasattr(value, "tzinfo") else value
            yield json.dumps(row, ensure_ascii=False) + "\n"
