"""Permission-checked fetches of ratings projects (CONTRIBUTING.md, "Permission-checked fetches")."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser

from annotation.access import MONITOR, access_project
from annotation.errors import NotFound, PermissionDenied
from ratings.models import ModelRun
from ratings.selectors import RatingsContext, ratings_context


def access_ratings_project(
    user: AbstractBaseUser, slug: str, roles: Iterable[str] = MONITOR
) -> RatingsContext:
    """The ratings project `slug` if the user holds one of `roles` in it (404 when it is not
    theirs or not a ratings project, 403 when they lack the role)."""
    project = access_project(user, slug, roles)
    context = ratings_context(project)
    if context is None:
        raise NotFound(f"{project.name} is not a ratings project.")
    return context


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


def access_model_run_for_deletion(context: RatingsContext, run_id: int, user) -> ModelRun:
    """A model run the user may delete: the researcher who uploaded it, or a project admin.
    Other researchers read runs but cannot remove each other's (403)."""
    run = access_model_run(context, run_id)
    if run is None:
        raise NotFound("There is no such model run in this project.")
    if run.uploaded_by_id != user.pk and "admin" not in context.project.user_roles:
        raise PermissionDenied(
            "Only whoever uploaded this model run, or a project admin, can delete it."
        )
    return run
