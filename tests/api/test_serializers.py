"""API serializers (api/serializers.py): a project is served with the caller's roles in it,
from the ProjectAccess that access_project and projects_for_user return."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Role
from annotation.services import membership_add
from tests.factories import make_member, make_project

pytestmark = pytest.mark.django_db


def test_my_projects_and_one_project_come_with_my_roles_sorted():
    project, other = make_project(slug="alpha-roles"), make_project(slug="beta-roles")
    user = make_member(project, Role.RESEARCHER)
    membership_add(project=project, user=user, role=Role.ANNOTATOR)
    make_member(other, Role.ADMIN)
    api = APIClient()
    api.force_authenticate(user)
    listed = api.get("/api/projects/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(row["slug"], row["roles"]) for row in rows] == [
        (project.slug, [Role.ANNOTATOR, Role.RESEARCHER])
    ]
    one = api.get(f"/api/projects/{project.slug}/").json()
    assert one["slug"] == project.slug and one["name"] == project.name
    assert one["roles"] == [Role.ANNOTATOR, Role.RESEARCHER]
