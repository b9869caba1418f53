"""Permission-checked fetches of the interop pages (CONTRIBUTING.md, "Permission-checked
fetches"): a project's admins only, as its Imports page."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MANAGE, ProjectAccess, access_project
from annotation.errors import NotFound
from annotation.models import Project, Stage


def access_interop_project(user: User | AnonymousUser, slug: str) -> ProjectAccess:
    """The project ``slug`` for importing from / exporting to another tool: its admins only
    (404 / 403 / 409 as ``annotation.access.access_project``)."""
    return access_project(user, slug, MANAGE)


def access_interop_stage(project: Project, stage_id: int) -> Stage:
    """A stage of ``project`` (fetched by ``access_interop_project``); 404 otherwise."""
    stage = Stage.objects.filter(project=project, pk=stage_id).first()
    if stage is None:
        raise NotFound("There is no such stage in this project.")
    return stage
