"""Permission-checked fetches of ratings projects (CONTRIBUTING.md, "Permission-checked fetches")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MONITOR, ProjectAccess, access_workflow_project
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from ratings.apps import RATINGS_WORKFLOW
from ratings.models import ModelRun
from ratings.selectors import RatingsContext, ratings_context


class RatingsAccess(NamedTuple):
    """A ratings project as one user reached it (access_ratings_project)."""

    #: The project and the user's roles in it.
    access: ProjectAccess
    #: The project with its decoded ratings settings.
    ratings: RatingsContext


def access_ratings_project(
    user: User | AnonymousUser, slug: str, roles: Iterable[str] = MONITOR
) -> RatingsAccess:
    """The ratings project `slug`, with the user's roles and its settings, if the user holds
    one of `roles` in it (404 when it is not theirs, 403 when they lack the role; another kind
    of project is a 400 naming it, the rule of ``annotation.access.access_workflow_project``)."""
    access = access_workflow_project(
        user, slug, workflow=RATINGS_WORKFLOW, label="ratings", roles=roles
    )
    context = ratings_context(access.project)
    if context is None:
        # ratings.project_setup creates a ratings project and its settings together: a project
        # of the kind without them is refused as ratings.project_setup refuses it.
        raise ApplicationError(
            f"{access.project.name} is not a ratings project.", {"project": access.project.slug}
        )
    return RatingsAccess(access=access, ratings=context)


def access_model_run(context: RatingsContext, run_id: int | str | None) -> ModelRun | None:
    """A model run of the project, or None when none is asked for. Another project's id is 404."""
    if run_id in (None, ""):
        return None
    try:
        run_id = int(run_id)
    except (TypeError, ValueError):
        raise NotFound("There is no such model run.") from None
    run = ModelRun.objects.filter(project=context.project, pk=run_id).first()
    if run is None:
        raise NotFound("There is no such model run in this project.")
    return run


def access_model_run_for_deletion(
    access: ProjectAccess, context: RatingsContext, run_id: int, user: User | AnonymousUser
) -> ModelRun:
    """A model run the user may delete: the researcher who uploaded it, or a project admin
    (``access``: the user's roles in ``context``'s project). Other researchers read runs but
    cannot remove each other's (403)."""
    run = access_model_run(context, run_id)
    if run is None:
        raise NotFound("There is no such model run in this project.")
    if run.uploaded_by_id != user.pk and not access.is_admin:
        raise PermissionDenied(
            "Only whoever uploaded this model run, or a project admin, can delete it."
        )
    return run
