"""Permission-checked fetches (annotation/access.py): a project comes back as a ProjectAccess
with the roles the user holds in it (nothing is set on the Project instance); a workflow's own
pages take only its own projects, refusing another kind with a 400 that names the project,
after the usual 404 / 403."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.access import (
    ANY_ROLE,
    MANAGE,
    MONITOR,
    ProjectAccess,
    access_project,
    access_workflow_project,
)
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.models import Role
from annotation.selectors import projects_for_user
from annotation.services import membership_add
from tests.factories import make_member, make_project, make_user

pytestmark = pytest.mark.django_db


def test_a_project_of_another_workflow_is_refused_naming_it():
    project = make_project(kind="generic")
    researcher = make_member(project, Role.RESEARCHER)
    with pytest.raises(ApplicationError) as refused:
        access_workflow_project(
            researcher, project.slug, workflow="meter", label="METER", roles=MONITOR
        )
    assert refused.value.status == 400
    assert refused.value.message == f"{project.name} is not a METER project."
    assert refused.value.extra == {"project": project.slug}


def test_the_workflow_check_comes_after_membership_and_role():
    project = make_project(kind="generic")
    annotator = make_member(project, Role.ANNOTATOR)
    with pytest.raises(NotFound):
        access_workflow_project(make_user(), project.slug, workflow="meter", label="METER")
    with pytest.raises(PermissionDenied):
        access_workflow_project(
            annotator, project.slug, workflow="meter", label="METER", roles=MONITOR
        )


def test_a_project_of_the_workflow_comes_back_with_the_roles_held():
    project = make_project(kind="meter")
    researcher = make_member(project, Role.RESEARCHER)
    found = access_workflow_project(
        researcher, project.slug, workflow="meter", label="METER", roles=MONITOR
    )
    assert found == ProjectAccess(project=project, roles=frozenset({Role.RESEARCHER}))


def test_access_project_returns_the_project_and_every_role_held_there():
    project = make_project()
    user = make_member(project, Role.RESEARCHER)
    membership_add(project=project, user=user, role=Role.ANNOTATOR)
    found = access_project(user, project.slug, MONITOR)
    assert found.project == project
    assert found.roles == frozenset({Role.RESEARCHER, Role.ANNOTATOR})
    assert found.roles_in_order == (Role.ANNOTATOR, Role.RESEARCHER)
    assert not hasattr(found.project, "user_roles")


def test_a_superuser_holds_every_role_through_access_project():
    project = make_project()
    found = access_project(make_user(is_superuser=True), project.slug, MANAGE)
    assert found.roles == frozenset(Role.values) and found.is_admin


@pytest.mark.parametrize(
    ("roles", "is_admin", "sees_annotators"),
    [
        ({Role.ANNOTATOR}, False, False),
        ({Role.REVIEWER}, False, False),
        ({Role.RESEARCHER}, False, True),
        ({Role.ADMIN}, True, True),
        ({Role.ANNOTATOR, Role.ADMIN}, True, True),
    ],
)
def test_the_helpers_of_a_project_access_follow_the_roles(roles, is_admin, sees_annotators):
    project = make_project()
    user = make_member(project, next(iter(roles)))
    for role in roles:
        membership_add(project=project, user=user, role=role)
    found = access_project(user, project.slug, ANY_ROLE)
    assert found.is_admin is is_admin
    assert found.sees_annotators is sees_annotators
    assert found.holds(MONITOR) is bool(roles & {Role.RESEARCHER, Role.ADMIN})


def test_projects_for_user_lists_each_project_once_with_its_roles_by_name():
    later, earlier, other = (
        make_project(slug="zeta-project"),
        make_project(slug="alpha-project"),
        make_project(),
    )
    user = make_member(later, Role.ADMIN)
    membership_add(project=later, user=user, role=Role.ANNOTATOR)
    membership_add(project=earlier, user=user, role=Role.REVIEWER)
    make_member(other, Role.ADMIN)
    assert projects_for_user(user) == [
        ProjectAccess(earlier, frozenset({Role.REVIEWER})),
        ProjectAccess(later, frozenset({Role.ADMIN, Role.ANNOTATOR})),
    ]


def test_projects_for_user_shows_a_superuser_as_admin_plus_the_roles_they_really_hold():
    mine, theirs = make_project(slug="alpha-mine"), make_project(slug="beta-theirs")
    root = make_user(is_superuser=True)
    membership_add(project=mine, user=root, role=Role.ANNOTATOR)
    assert projects_for_user(root) == [
        ProjectAccess(mine, frozenset({Role.ADMIN, Role.ANNOTATOR})),
        ProjectAccess(theirs, frozenset({Role.ADMIN})),
    ]


@pytest.mark.parametrize(
    ("url_name", "label"),
    [
        ("meter:meter", "METER"),
        ("causalt5k:report", "CausalT5k"),
        ("graphs:scores", "CARL-GT"),
        ("graphs:questions", "CARL-GT"),
        ("narratives:baseline", "CausalNarratives"),
        ("ratings:dashboard", "ratings"),
    ],
)
def test_each_workflow_tab_refuses_another_kind_of_project(client, url_name, label):
    project = make_project(kind="generic")
    client.force_login(make_member(project, Role.RESEARCHER))
    response = client.get(reverse(url_name, args=[project.slug]))
    assert response.status_code == 400
    assert f"is not a {label} project" in response.content.decode()
