"""Permission-checked fetches of the REST API (CONTRIBUTING.md, "Permission-checked fetches"):
objects inside a project the caller has already fetched with ``annotation.access.access_project``
for the role the endpoint needs. An id from another project answers like an unknown one (404),
so ids reveal nothing."""

from __future__ import annotations

from annotation.errors import NotFound
from annotation.models import Item, Project
from imports import selectors as import_selectors
from imports.models import ImportBatch


def access_item(project: Project, item_id: int) -> Item:
    """Item ``item_id`` of ``project`` (admins: ``MANAGE``), or 404."""
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise NotFound(f"{project.name} has no item {item_id}.")
    return item


def access_import_batch(project: Project, batch_id: int) -> ImportBatch:
    """Import ``batch_id`` of ``project`` (admins: ``MANAGE``), or 404."""
    batch = import_selectors.import_batch(project, batch_id)
    if batch is None:
        raise NotFound(f"{project.name} has no import {batch_id}.")
    return batch
