"""No release names a person: every demo project (annotation/management/commands/seed_demo.py
and every app's demo) seeded for a cast with distinctive names, released, and every file of
every release searched for every member's username, first name and last name."""

from __future__ import annotations

import zipfile

import pytest

from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.management.commands.seed_demo import demo_projects_seed
from annotation.models import Item, Membership, Project
from releases.models import Release
from releases.services import release_publish, release_publish_refusal
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def test_no_file_of_any_demo_release_names_a_member(django_capture_on_commit_callbacks):
    users = {
        name: make_user(
            f"zqv{name}wex",
            first_name=f"Quillonar{number}",
            last_name=f"Brackwaterby{number}",
        )
        for number, name in enumerate(DEMO_ROLES)
    }
    with django_capture_on_commit_callbacks(execute=True):
        demo_projects_seed(users)
    members = Membership.objects.select_related("user").values_list(
        "user__username", "user__first_name", "user__last_name"
    )
    needles = {value.casefold() for member in members for value in member if value}
    assert {user.get_username().casefold() for user in users.values()} <= needles
    projects = list(Project.objects.order_by("slug"))
    assert len(projects) >= 7  # every demo project, each released below
    found = []
    for project in projects:
        # Items still in the pipeline are released as accepted, so that every payload a demo
        # holds (a case written by a member, waiting for review) is in a file searched.
        Item.objects.filter(project=project, status=Item.Status.ACTIVE).update(
            status=Item.Status.ACCEPTED
        )
        assert release_publish_refusal(project) is None
        with django_capture_on_commit_callbacks(execute=True):
            release = release_publish(project=project, user=None)
        release = Release.objects.get(pk=release.pk)
        assert release.status == "published", (project.slug, release.error)
        with zipfile.ZipFile(release.archive.path) as archive:
            for name in archive.namelist():
                text = archive.read(name).decode("utf-8", errors="replace").casefold()
                found += [(project.slug, name, n) for n in sorted(needles) if n in text]
    assert found == []
