"""Permission-checked fetches (annotation/access.py): a workflow's own pages take only its own
projects, refusing another kind with a 400 that names the project, after the usual 404 / 403."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.access import MONITOR, access_workflow_project
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.models import Role
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
    assert found.pk == project.pk and found.user_roles == {Role.RESEARCHER}


@pytest.mark.parametrize(
    ("url_name", "label"),
    [
        ("meter:meter", "METER"),
        ("causalt5k:report", "CausalT5k"),
        ("graphs:scores", "CARL-GT"),
        ("narratives:baseline", "CausalNarratives"),
    ],
)
def test_each_workflow_tab_refuses_another_kind_of_project(client, url_name, label):
    project = make_project(kind="generic")
    client.force_login(make_member(project, Role.RESEARCHER))
    response = client.get(reverse(url_name, args=[project.slug]))
    assert response.status_code == 400
    assert f"is not a {label} project" in response.content.decode()
