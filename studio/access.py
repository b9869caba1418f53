"""Permission-checked fetches of the setup pages (CONTRIBUTING.md, "Permission-checked
fetches"): a project's admins reach its stages and invites, admins, researchers and reviewers
its item browser. Unknown ids and other projects' ids answer alike (404)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MANAGE, ProjectAccess, access_project
from annotation.errors import NotFound
from annotation.models import Project, Role, Stage

#: Who opens the item browser and an item's history.
BROWSE_ROLES = (Role.ADMIN, Role.RESEARCHER, Role.REVIEWER)


def access_project_setup(
    user: User | AnonymousUser, slug: str, *, while_archived: bool = False
) -> ProjectAccess:
    """The project ``slug`` for its setup pages, with the user's roles in it: its admins only
    (404 / 403 as ``annotation.access.access_project``, and its refusal of changes to an
    archived project unless ``while_archived``: restoring or cloning it)."""
    return access_project(user, slug, MANAGE, while_archived=while_archived)


def access_project_items(
    user: User | AnonymousUser, slug: str, *, while_archived: bool = False
) -> ProjectAccess:
    """The project ``slug`` for its item browser (``BROWSE_ROLES``), with the user's roles
    (``while_archived``: a change that is the viewer's own, such as their columns)."""
    return access_project(user, slug, BROWSE_ROLES, while_archived=while_archived)


def access_setup_stage(project: Project, stage_id: int) -> Stage:
    """A stage of ``project`` (fetched by ``access_project_setup``); another project's stage
    id answers as an unknown one."""
    stage = Stage.objects.filter(project=project, pk=stage_id).first()
    if stage is None:
        raise NotFound("There is no such stage in this project.")
    return stage


#: Who opens a stage's silent gold page and confirms gold: the roles that see gold answers
#: (annotation.access.IDENTITY_ROLES).
GOLD_ROLES = (Role.ADMIN, Role.RESEARCHER)


def access_stage_gold(
    user: User | AnonymousUser, slug: str, stage_id: int
) -> tuple[ProjectAccess, Stage]:
    """The project ``slug`` and its stage ``stage_id`` for the stage's gold page (GOLD_ROLES;
    404 / 403 as annotation.access.access_project; another project's stage answers as an
    unknown one)."""
    access = access_project(user, slug, GOLD_ROLES)
    return access, access_setup_stage(access.project, stage_id)
