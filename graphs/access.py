"""Permission-checked fetches of the Graphs tab (CONTRIBUTING.md, "Permission-checked
fetches"): a CARL-GT project for the roles a page admits."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MONITOR, access_project
from annotation.errors import ApplicationError
from annotation.models import Project
from graphs.services import WORKFLOW


def access_graphs_project(
    user: User | AnonymousUser, slug: str, roles: Iterable[str] = MONITOR
) -> Project:
    """The project ``slug`` when the user holds one of ``roles`` in it (404 / 403 as
    ``annotation.access.access_project``); another kind of project is a 400 naming it."""
    project = access_project(user, slug, roles)
    if project.kind != WORKFLOW:
        raise ApplicationError(
            f"{project.name} is not a CARL-GT project.", {"project": project.slug}
        )
    return project
