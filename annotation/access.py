"""Permission-checked fetches (CONTRIBUTING.md, "Permission-checked fetches"): the only way a view gets an object a user might
not be allowed to see. Unknown ids and ids of other people's objects get the same 404, so that
guessing ids reveals nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

from django.contrib.auth.models import AnonymousUser, User
from django.db import connection

from annotation import gates, sql
from annotation.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotation.models import Annotation, Assignment, Membership, Project, Role, Stage

#: The one answer for an assignment id that is unknown or someone else's (both 404), so that
#: trying ids reveals nothing, not even which ones exist.
NO_SUCH_ASSIGNMENT = "There is no such assignment among yours; ask for your next item."
#: The same for an answer (annotation) id.
NO_SUCH_ANSWER = "There is no such answer among yours."

#: Who may do what. Admins may do everything in their project; superusers everywhere.
ANNOTATE = (Role.ANNOTATOR,)
ADJUDICATE = (Role.REVIEWER, Role.ADMIN)
MONITOR = (Role.RESEARCHER, Role.ADMIN)
MANAGE = (Role.ADMIN,)
ANY_ROLE = tuple(Role.values)


def user_roles(user: User | AnonymousUser, project: Project) -> frozenset[str]:
    """The role values `user` holds in `project`: none for anonymous users, every role for
    superusers (see projects_for_user in annotation.selectors for the one place that differs)."""
    if not user.is_authenticated:
        return frozenset()
    if user.is_superuser:
        return frozenset(Role.values)
    return frozenset(
        Membership.objects.filter(project=project, user=user.pk).values_list("role", flat=True)
    )


#: The roles that see who gave an answer and an item's known answer (its ``gold`` field): those
#: who manage and measure the annotators. Reviewers weigh answers, not people (the adjudication
#: page shows "Annotator 1, 2, …"), and see no gold, like the annotators they judge.
IDENTITY_ROLES = frozenset({Role.RESEARCHER, Role.ADMIN})

#: Each role value's place in the order of Role (annotator first).
ROLE_ORDER = {role: index for index, role in enumerate(Role.values)}


def roles_in_order(roles: Iterable[str]) -> tuple[str, ...]:
    """Role values in the order of Role (annotator first), for showing them."""
    return tuple(sorted(set(roles), key=ROLE_ORDER.__getitem__))


@dataclass(frozen=True)
class ProjectAccess:
    """A project as one user reached it, with the roles they hold there.

    What ``access_project`` (and every ``access_*`` built on it) returns, and what
    ``annotation.selectors.projects_for_user`` lists. ``roles`` are role values (``Role``); for
    ``access_project`` they are never empty and include at least one of the roles asked for.
    Superusers hold every role here, except in ``projects_for_user`` (admin plus the roles they
    really hold). Nothing is set on ``project``: read the roles from this value only."""

    project: Project
    roles: frozenset[str]

    def holds(self, roles: Iterable[str]) -> bool:
        """Whether the user holds at least one of `roles` (``MANAGE``, ``MONITOR``, …)."""
        return not self.roles.isdisjoint(roles)

    @property
    def is_admin(self) -> bool:
        """Whether the user is an admin of the project (``MANAGE``)."""
        return self.holds(MANAGE)

    @property
    def sees_annotators(self) -> bool:
        """Whether the user sees annotators' names and gold answers (``IDENTITY_ROLES``)."""
        return self.holds(IDENTITY_ROLES)

    @property
    def roles_in_order(self) -> tuple[str, ...]:
        """The roles in the order of Role (annotator first), for showing them."""
        return roles_in_order(self.roles)


# --- Archived projects are read-only ------------------------------------------------------------
#
# The one guard: ``access_project`` (every project page's and API endpoint's fetch, and every
# ``access_*`` built on it) refuses an archived project while the request being served asks to
# change something (``changing_request``: POST, PUT, PATCH, DELETE; set for each request by
# ``annotation.middleware.ArchivedProjectsReadOnly``). Reading stays open. A view that must
# work on an archived project — restoring it, cloning its setup — says so with
# ``while_archived=True``. The annotator's paths refuse it in ``access_stage_for_annotator`` and
# the submit's locked read (``services/leases.py``), whatever the method.

#: Whether the request being served asks to change something (see above).
_CHANGING: ContextVar[bool] = ContextVar("rungwise_request_changes", default=False)


@contextmanager
def changing_request(changing: bool) -> Iterator[None]:
    """Serve a request that asks to change something (``changing``) or only to read."""
    token = _CHANGING.set(changing)
    try:
        yield
    finally:
        _CHANGING.reset(token)


def archived_refusal(project: Project) -> Conflict:
    """The one answer to a change asked of an archived project (409, ``extra`` names it)."""
    return Conflict(
        f"{project.name} is archived, so it is read-only: nothing in it can be changed. An admin "
        "of the project can restore it (Setup tab, or Archived projects in the account menu).",
        {"project": "archived"},
    )


def refuse_if_archived(project: Project) -> None:
    """Raise ``archived_refusal`` when ``project`` is archived, whatever the request: for a
    write that reaches a project other than through ``access_project`` (an invite link)."""
    if not project.is_active:
        raise archived_refusal(project)


def guard_archived(project: Project, *, while_archived: bool = False) -> None:
    """The guard itself: ``archived_refusal`` when ``project`` is archived and the request asks
    to change something (``changing_request``), unless ``while_archived``. ``access_project``
    calls it; a fetch of a project that does not go through ``access_project`` calls it too,
    after its role checks."""
    if not project.is_active and not while_archived and _CHANGING.get():
        raise archived_refusal(project)


def access_project(
    user: User | AnonymousUser,
    slug: str,
    roles: Iterable[str] = ANY_ROLE,
    *,
    while_archived: bool = False,
) -> ProjectAccess:
    """The project `slug` and the user's roles in it (ProjectAccess), if the user holds one of
    `roles` there (404 when not a member at all, 403 when a member without the role). An
    archived project asked to change (``changing_request``) is a 409 (``archived_refusal``)
    unless ``while_archived``; members only learn it is archived (others get the 404)."""
    project = Project.objects.filter(slug=slug).first()
    held = user_roles(user, project) if project is not None else frozenset()
    if project is None or not held:
        raise NotFound("There is no such project among yours.")
    if held.isdisjoint(roles):
        raise PermissionDenied(
            f"This page is for the project's {' or '.join(sorted(roles))}s; you are "
            f"{' and '.join(sorted(held))}."
        )
    guard_archived(project, while_archived=while_archived)
    return ProjectAccess(project=project, roles=held)


def access_workflow_project(
    user: User | AnonymousUser,
    slug: str,
    *,
    workflow: str,
    label: str,
    roles: Iterable[str] = ANY_ROLE,
) -> ProjectAccess:
    """``access_project`` for a plug-in's own pages: the project must also be of ``workflow``,
    else a 400 "<name> is not a <label> project." naming it (the one rule every workflow's tab
    uses)."""
    access = access_project(user, slug, roles)
    project = access.project
    if project.kind != workflow:
        raise ApplicationError(
            f"{project.name} is not a {label} project.", {"project": project.slug}
        )
    return access


def access_stage(user: User | AnonymousUser, project: Project, stage_slug: str) -> Stage:
    """A stage of a project already fetched with access_project."""
    stage = Stage.objects.filter(project=project, slug=stage_slug).first()
    if stage is None:
        raise NotFound(f"{project.name} has no stage {stage_slug!r}.")
    stage.project = project
    return stage


#: The flags _stage_for_annotator_sql selects after the stage's and project's columns, in order.
_STAGE_FLAGS = ("is_member", "is_annotator", "is_paused", "current_assignment_id", "governed")


@cache
def stage_for_annotator_select(vendor: str, user: str) -> str:
    """SQL: the columns access_stage_for_annotator reads for the annotator ``user`` (a column or
    a parameter) over the aliases ``st`` (the stage) and ``p`` (its project): the stage's, the
    project's, then the flags of _STAGE_FLAGS. With stage_for_annotator_row, for a statement that
    reads the stage together with something else (api/views/annotate_lean.py: with the token)."""
    memberships, assignments = sql.table(Membership), sql.table(Assignment)
    m, a = sql.quoted(Membership, "m"), sql.quoted(Assignment, "a")
    st = sql.quoted(Stage, "st")
    member = (
        f"SELECT 1 FROM {memberships} m WHERE {m.project_id} = {st.project_id}"
        f" AND {m.user_id} = {user}"
    )
    annotator = f"{member} AND {m.role} = '{Role.ANNOTATOR.value}'"
    flags = {
        "is_member": f"EXISTS ({member})",
        "is_annotator": f"EXISTS ({annotator})",
        "is_paused": f"EXISTS ({annotator} AND {m.is_paused})",
        "current_assignment_id": (
            f"(SELECT {a.id} FROM {assignments} a WHERE {a.stage_id} = {st.id}"
            f" AND {a.annotator_id} = {user}"
            f" AND {a.status} = '{Assignment.Status.ACTIVE.value}' LIMIT 1)"
        ),
        "governed": gates.governed_sql(annotator=user, project=st.project_id),
    }
    return (
        f"{sql.columns(Stage, 'st')}, {sql.columns(Project, 'p')},"
        f" {', '.join(flags[name] for name in _STAGE_FLAGS)}"
    )


def stage_for_annotator_width() -> int:
    """How many columns stage_for_annotator_select gives."""
    return sql.width(Stage) + sql.width(Project) + len(_STAGE_FLAGS)


@cache
def _stage_for_annotator_sql(vendor: str) -> str:
    p, st = sql.quoted(Project, "p"), sql.quoted(Stage, "st")
    return (
        f"SELECT {stage_for_annotator_select(vendor, '%(user)s')}"
        f" FROM {sql.table(Stage)} st JOIN {sql.table(Project)} p ON {p.id} = {st.project_id}"
        f" WHERE {st.id} = %(stage)s"
    )


class StageForAnnotator(NamedTuple):
    """A stage as its annotator reaches it (access_stage_for_annotator): what
    services.assignment_next needs to lease without reading them again."""

    #: The stage, with its project loaded (``stage.project``).
    stage: Stage
    #: The annotator's active lease in this stage, if they hold one.
    current_assignment_id: int | None
    #: Whether an annotator gate governs the annotator in the project (annotation.gates).
    governed: bool


def access_stage_for_annotator(*, user: User | AnonymousUser, stage_id: int) -> StageForAnnotator:
    """The stage, if `user` is an active (not paused) annotator of its project, with the user's
    current lease id in it and whether an annotator gate governs them (StageForAnnotator).

    One statement (hand-written, annotation.sql: this runs on every next item): the stage, its
    project, the membership tests, the lease id and the gates' condition (annotation.gates)."""
    row = None
    if sql.in_range(Stage, stage_id):
        row = sql.fetchone(
            _stage_for_annotator_sql(connection.vendor), {"user": user.pk, "stage": stage_id}
        )
    return stage_for_annotator_row(row, 0, user)


def stage_for_annotator_row(
    row: Sequence[object] | None, start: int, user: User | AnonymousUser
) -> StageForAnnotator:
    """access_stage_for_annotator's answer from ``row[start:]``, the columns of
    stage_for_annotator_select read for `user` (no row, or a stage id of NULL: no such stage),
    with every one of its refusals."""
    if row is None or row[start] is None:
        raise NotFound("There is no such stage in your projects.")
    (stage, project), flags = sql.unpack(
        row[start : start + stage_for_annotator_width()], (Stage, Project), _STAGE_FLAGS
    )
    assert isinstance(stage, Stage) and isinstance(project, Project)
    if not (flags["is_member"] or user.is_superuser):
        # The same answer for "no such stage" and "not yours": ids reveal nothing.
        raise NotFound("There is no such stage in your projects.")
    if not flags["is_annotator"]:
        raise PermissionDenied("Only the project's annotators get items to annotate.")
    if flags["is_paused"]:
        raise PermissionDenied(
            "Your annotation in this project is paused by the researchers; contact them."
        )
    stage.project = project
    refuse_if_archived(project)
    if not stage.is_active:
        raise Conflict("This stage is closed.")
    return StageForAnnotator(
        stage=stage,
        current_assignment_id=flags["current_assignment_id"],
        governed=bool(flags["governed"]),
    )


def access_own_answer(user: User, annotation_id: int) -> Annotation:
    """The user's own answer (its current version, if `annotation_id` names an earlier one),
    with its item stage, item, stage and project; an unknown id and someone else's get the same
    404, and so does an answer an annotator gate sealed (annotation.gates.sealed_before). Not
    on the hot path: the change page and its form only."""
    found = None
    if sql.in_range(Annotation, annotation_id):
        found = (
            Annotation.all_versions.filter(pk=annotation_id, annotator_id=user.pk)
            .exclude(assignment=None)
            .only("pk", "assignment_id", "is_current")
            .first()
        )
    if found is None or found.assignment_id is None:
        raise NotFound(NO_SUCH_ANSWER)
    answer = (
        Annotation.objects.select_related("item_stage__item", "item_stage__stage__project")
        .select_related("assignment")
        .get(assignment_id=found.assignment_id)
    )
    sealed = gates.sealed_before(
        annotator_id=user.pk, project_id=answer.item_stage.stage.project_id
    )
    if sealed is not None and answer.created_at < sealed:
        raise NotFound(NO_SUCH_ANSWER)
    return answer


def access_assignment(user: User | AnonymousUser, assignment_id: int) -> Assignment:
    """The user's own assignment; an unknown id and someone else's get the same 404."""
    assignment = (
        Assignment.objects.select_related("item_stage__item", "stage__project")
        .filter(pk=assignment_id, annotator_id=user.pk)
        .first()
    )
    if assignment is None:
        raise NotFound(NO_SUCH_ASSIGNMENT)
    return assignment


__all__ = [
    "ADJUDICATE",
    "ANNOTATE",
    "ANY_ROLE",
    "IDENTITY_ROLES",
    "MANAGE",
    "MONITOR",
    "ROLE_ORDER",
    "Conflict",
    "ProjectAccess",
    "StageForAnnotator",
    "access_assignment",
    "access_own_answer",
    "access_project",
    "access_stage",
    "access_stage_for_annotator",
    "access_workflow_project",
    "archived_refusal",
    "changing_request",
    "guard_archived",
    "refuse_if_archived",
    "roles_in_order",
    "stage_for_annotator_row",
    "stage_for_annotator_select",
    "stage_for_annotator_width",
    "user_roles",
]
