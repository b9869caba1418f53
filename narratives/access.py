"""Permission-checked fetches of the Narratives tab (CONTRIBUTING.md, "Permission-checked
fetches"): a CausalNarratives project for the roles a page admits, and one of its narratives.
Unknown ids and other projects' ids answer alike (404)."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MONITOR, ProjectAccess, access_workflow_project
from annotation.errors import NotFound
from annotation.models import Item, Project
from narratives.services import WORKFLOW


def access_narratives_project(
    user: User | AnonymousUser, slug: str, roles: Iterable[str] = MONITOR
) -> ProjectAccess:
    """The project ``slug`` and the user's roles in it, when they hold one of ``roles``
    (404 / 403 as ``annotation.access.access_project``); another kind of project is a 400
    naming it."""
    return access_workflow_project(
        user, slug, workflow=WORKFLOW, label="CausalNarratives", roles=roles
    )


def access_narrative(project: Project, item_id: int) -> Item:
    """A narrative of ``project`` (an item with its true structure, ``payload["gold"]``)."""
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None or not (item.payload or {}).get("gold"):
        raise NotFound("No such narrative in this project.")
    return item
