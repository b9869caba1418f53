"""Permission-checked fetches of the models' pages (CONTRIBUTING.md, "Permission-checked
fetches"). Unknown ids and other projects' ids answer alike (404), so ids reveal nothing.

Who may do what:

* **Endpoints** (``/llm/endpoints/``, shared by every project): staff, superusers, and anyone
  who is an admin of at least one project may list, add, edit and test them
  (:func:`may_manage_endpoints`). Keys are never shown nor accepted: an endpoint names the
  environment variable that holds its key (llm/models.py).
* **A project's Models tab**: its researchers and admins read it (templates, versions, model
  raters, runs and their calls); only its admins write (prompts, previews, which may call a
  model and cost money, raters, runs and their control) — :class:`ModelsProject` says which.

Roles are read with ``annotation.access.user_roles``, so the rule here holds whatever else a
project's access result carries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User

from annotation.access import MANAGE, MONITOR, guard_archived, user_roles
from annotation.errors import NotFound, PermissionDenied
from annotation.models import Membership, Project, Role, Stage
from llm.models import Endpoint, Evaluation, ModelRater, PromptTemplate, PromptVersion, Run

#: The one refusal of the endpoints' pages.
ENDPOINTS_REFUSED = "Model endpoints are managed by staff and by the admins of a project."


def may_manage_endpoints(user: User | AnonymousUser) -> bool:
    """Staff, superusers, and admins of any project (the rule in the module docstring)."""
    if not user.is_authenticated:
        return False
    if user.is_staff or user.is_superuser:
        return True
    return Membership.objects.filter(user=user.pk, role=Role.ADMIN).exists()


def access_endpoints(user: User | AnonymousUser) -> None:
    """PermissionDenied (403) unless ``user`` may manage endpoints."""
    if not may_manage_endpoints(user):
        raise PermissionDenied(ENDPOINTS_REFUSED)


def access_endpoint(user: User | AnonymousUser, endpoint_id: int) -> Endpoint:
    """The endpoint ``endpoint_id`` for someone who may manage endpoints (403 otherwise)."""
    access_endpoints(user)
    endpoint = Endpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound("There is no such endpoint.")
    return endpoint


@dataclass(frozen=True)
class ModelsProject:
    """A project as a user reached its Models tab: ``can_write`` for its admins."""

    project: Project
    roles: frozenset[str]

    @property
    def can_write(self) -> bool:
        return not self.roles.isdisjoint(MANAGE)


def access_models_project(
    user: User | AnonymousUser, slug: str, roles: Iterable[str] = MONITOR
) -> ModelsProject:
    """The project ``slug`` for its Models tab when ``user`` holds one of ``roles`` there
    (404 for a project that is not theirs, 403 for a member without the role)."""
    project = Project.objects.filter(slug=slug).first()
    held = frozenset(user_roles(user, project)) if project is not None else frozenset()
    if project is None or not held:
        raise NotFound("There is no such project among yours.")
    wanted = frozenset(roles)
    if held.isdisjoint(wanted):
        raise PermissionDenied(
            f"The Models tab is for the project's {' or '.join(sorted(wanted))}s; you are "
            f"{' and '.join(sorted(held))}."
        )
    # Archived projects are read-only (annotation/access.py): the engine's one guard.
    guard_archived(project)
    return ModelsProject(project=project, roles=held)


def access_models_admin(user: User | AnonymousUser, slug: str) -> ModelsProject:
    """``access_models_project`` for the tab's writes: the project's admins only."""
    return access_models_project(user, slug, MANAGE)


def access_stage(project: Project, stage_id: int) -> Stage:
    stage = Stage.objects.filter(project=project, pk=stage_id).first()
    if stage is None:
        raise NotFound(f"{project.name} has no such stage.")
    stage.project = project
    return stage


def access_template(project: Project, template_id: int) -> PromptTemplate:
    template = PromptTemplate.objects.filter(project=project, pk=template_id).first()
    if template is None:
        raise NotFound(f"{project.name} has no such prompt.")
    return template


def access_version(project: Project, version_id: int) -> PromptVersion:
    version = (
        PromptVersion.objects.select_related("template")
        .filter(template__project=project, pk=version_id)
        .first()
    )
    if version is None:
        raise NotFound(f"{project.name} has no such prompt version.")
    return version


def access_rater(project: Project, rater_id: int) -> ModelRater:
    rater = (
        ModelRater.objects.select_related("stage", "endpoint", "prompt__template")
        .filter(stage__project=project, pk=rater_id)
        .first()
    )
    if rater is None:
        raise NotFound(f"{project.name} has no such model rater.")
    return rater


def access_run(project: Project, run_id: int) -> Run:
    run = (
        Run.objects.select_related("rater__stage", "rater__endpoint", "rater__prompt__template")
        .filter(project=project, pk=run_id)
        .first()
    )
    if run is None:
        raise NotFound(f"{project.name} has no such run.")
    return run


def access_evaluation(
    user: User | AnonymousUser, project: Project, evaluation_id: int
) -> Evaluation:
    """An evaluation of one of ``project``'s releases (the caller has fetched the project with
    ``access_project`` for the role it needs); 404 for an id the project does not hold."""
    evaluation = (
        Evaluation.objects.select_related("release", "endpoint", "run")
        .filter(pk=evaluation_id, release__project=project)
        .first()
    )
    if evaluation is None:
        raise NotFound(f"{project.name} has no evaluation {evaluation_id}.")
    return evaluation
