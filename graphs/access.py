"""Permission-checked fetches of the Graphs tab (CONTRIBUTING.md, "Permission-checked
fetches"): a CARL-GT project for the roles a page admits."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MONITOR, ProjectAccess, access_workflow_project
from graphs.services import WORKFLOW


def access_graphs_project(
    user: User | AnonymousUser, slug: str, roles: Iterable[str] = MONITOR
) -> ProjectAccess:
    """The project ``slug`` and the user's roles in it, when they hold one of ``roles``
    (404 / 403 as ``annotation.access.access_project``); another kind of project is a 400
    naming it."""
    return access_workflow_project(user, slug, workflow=WORKFLOW, label="CARL-GT", roles=roles)
