"""Permission-checked fetches (CONVENTIONS 2): the only way a view gets an object a user might
not be allowed to see. Unknown ids and ids of other people's objects get the same 404, so that
guessing ids reveals nothing."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Exists, OuterRef, Subquery

from .errors import Conflict, NotFound, PermissionDenied
from .models import Assignment, ItemStage, Membership, Project, Release, Role, Stage

FOREIGN_ASSIGNMENT = "This item is assigned to another annotator; ask for your own next item."

#: Who may do what. Admins may do everything in their project; superusers everywhere.
ANNOTATE = (Role.ANNOTATOR,)
ADJUDICATE = (Role.REVIEWER, Role.ADMIN)
MONITOR = (Role.RESEARCHER, Role.ADMIN)
MANAGE = (Role.ADMIN,)
ANY_ROLE = tuple(Role.values)


def user_roles(user: AbstractBaseUser, project: Project) -> set[str]:
    if not user.is_authenticated:
        return set()
    if user.is_superuser:
        return set(Role.values)
    return set(Membership.objects.filter(project=project, user=user).values_list("role", flat=True))


def access_project(user: AbstractBaseUser, slug: str, roles: Iterable[str] = ANY_ROLE) -> Project:
    """The project `slug` if the user holds one of `roles` in it (404 when not a member at all,
    403 when a member without the role)."""
    project = Project.objects.filter(slug=slug).first()
    held = user_roles(user, project) if project is not None else set()
    if project is None or not held:
        raise NotFound("There is no such project among yours.")
    if not held & set(roles):
        raise PermissionDenied(
            f"This page is for the project's {' or '.join(sorted(roles))}s; you are "
            f"{' and '.join(sorted(held))}."
        )
    project.user_roles = held
    return project


def access_stage(user: AbstractBaseUser, project: Project, stage_slug: str) -> Stage:
    """A stage of a project already fetched with access_project."""
    stage = Stage.objects.filter(project=project, slug=stage_slug).first()
    if stage is None:
        raise NotFound(f"{project.name} has no stage {stage_slug!r}.")
    stage.project = project
    return stage


def access_stage_for_annotator(*, user: AbstractBaseUser, stage_id: int) -> Stage:
    """The stage, if `user` is an active (not paused) annotator of its project.

    One query: the stage, the membership test and the user's current lease id in this stage
    (as `current_assignment_id`)."""
    any_role = Membership.objects.filter(project=OuterRef("project_id"), user=user.pk)
    is_member = any_role.filter(role=Role.ANNOTATOR)
    paused = is_member.filter(is_paused=True)
    current = Assignment.objects.filter(
        stage=OuterRef("pk"), annotator=user.pk, status=Assignment.Status.ACTIVE
    ).values("pk")[:1]
    stage = (
        Stage.objects.select_related("project")
        .annotate(
            is_in_project=Exists(any_role),
            is_member=Exists(is_member),
            is_paused=Exists(paused),
            current_assignment_id=Subquery(current),
        )
        .filter(pk=stage_id)
        .first()
    )
    if stage is None or not (stage.is_in_project or user.is_superuser):
        # The same answer for "no such stage" and "not yours": ids reveal nothing.
        raise NotFound("There is no such stage in your projects.")
    if not stage.is_member:
        raise PermissionDenied("Only the project's annotators get items to annotate.")
    if stage.is_paused:
        raise PermissionDenied(
            "Your annotation in this project is paused by the researchers; contact them."
        )
    if not (stage.is_active and stage.project.is_active):
        raise Conflict("This stage is closed.")
    return stage


def access_assignment(user: AbstractBaseUser, assignment_id: int) -> Assignment:
    """The user's own assignment. Someone else's is a 403 that says so (the issue's contract
    for foreign leases; nothing of the item or its answers is revealed), an unknown id a 404."""
    assignment = (
        Assignment.objects.select_related("item_stage__item", "stage__project")
        .filter(pk=assignment_id)
        .first()
    )
    if assignment is None:
        raise NotFound("There is no such assignment.")
    if assignment.annotator_id != user.pk:
        raise PermissionDenied(FOREIGN_ASSIGNMENT)
    return assignment


def access_item_stage_for_adjudication(user: AbstractBaseUser, item_stage_id: int) -> ItemStage:
    item_stage = (
        ItemStage.objects.select_related("item", "stage__project").filter(pk=item_stage_id).first()
    )
    if item_stage is None:
        raise NotFound("There is no such item.")
    access_project(user, item_stage.stage.project.slug, ADJUDICATE)
    return item_stage


def access_release(user: AbstractBaseUser, project: Project, version: int) -> Release:
    release = Release.objects.filter(project=project, version=version).first()
    if release is None:
        raise NotFound(f"{project.name} has no release v{version}.")
    return release


__all__ = [
    "ADJUDICATE",
    "ANNOTATE",
    "MANAGE",
    "MONITOR",
    "Conflict",
    "access_assignment",
    "access_item_stage_for_adjudication",
    "access_project",
    "access_release",
    "access_stage",
    "access_stage_for_annotator",
    "user_roles",
]
