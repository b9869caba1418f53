"""The publish confirmation (releases/services/publish.py, releases/templates/releases/publish.html):
a warning when publishing now would repeat the last published version's data, and the items a
release leaves out because they are still in the pipeline, each linked to its page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Item, Role
from releases.models import Release
from releases.services import release_publish, release_publish_preview, release_unresolved
from tests.factories import PASSWORD, make_items, make_member, make_project, make_verify_stage
from tests.releases.test_services import annotate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return settings.MEDIA_ROOT


@pytest.fixture
def half_done(django_capture_on_commit_callbacks):
    """Four items kept by three annotators; two more imported afterwards, still open."""
    project = make_project(slug="half-done")
    stage = make_verify_stage(project, overlap=3)
    make_items(project, 4)
    people = [make_member(project, Role.ANNOTATOR, f"ann{n}") for n in range(3)]
    annotate(stage, people, ["keep", "keep", "keep"], django_capture_on_commit_callbacks)
    make_items(project, 2, prefix="late")
    admin = make_member(project, Role.ADMIN, "the-admin")
    return project, stage, people, admin


def publish(project, user, on_commit) -> Release:
    with on_commit(execute=True):
        release = release_publish(project=project, user=user)
    release.refresh_from_db()
    assert release.status == Release.Status.PUBLISHED, release.message
    return release


def test_the_unresolved_items_are_listed_with_where_they_wait(half_done):
    project, stage, _, _ = half_done
    found = release_unresolved(project)
    assert found["count"] == 2
    assert [item["external_id"] for item in found["items"]] == ["late-00000", "late-00001"]
    assert found["items"][0]["where"] == [f"{stage.name}: open"]
    assert release_unresolved(project, limit=1)["count"] == 2


def test_a_publish_that_would_repeat_the_last_version_is_warned_about(
    half_done, django_capture_on_commit_callbacks
):
    project, _, people, admin = half_done
    assert release_publish_preview(project)["identical_to"] is None  # nothing published yet
    first = publish(project, admin, django_capture_on_commit_callbacks)
    assert first.stats["content"]["items"][0] == 4
    assert release_publish_preview(project)["identical_to"] == first
    client = Client()
    assert client.login(username=admin.username, password=PASSWORD)
    html = client.get(reverse("releases:publish", args=[project.slug])).content.decode()
    assert "Nothing changed since v1." in html
    assert "Left out: 2 items still in the pipeline" in html
    late = Item.objects.get(project=project, external_id="late-00000")
    assert f'href="{reverse("studio:item", args=[project.slug, late.pk])}"' in html
    # One more item decided: the data differ, no warning.
    annotate(
        project.stages.get(),
        people,
        ["keep", "keep", "keep"],
        django_capture_on_commit_callbacks,
    )
    preview = release_publish_preview(project)
    assert preview["identical_to"] is None and preview["unresolved"]["count"] == 0
    html = client.get(reverse("releases:publish", args=[project.slug])).content.decode()
    assert "Nothing changed" not in html and "Every item is decided" in html


def test_a_changed_decision_is_a_change(half_done, django_capture_on_commit_callbacks):
    project, _, _, admin = half_done
    publish(project, admin, django_capture_on_commit_callbacks)
    kept = Item.objects.get(project=project, external_id="item-00000")
    Item.objects.filter(pk=kept.pk).update(status=Item.Status.DISCARDED)  # one item fewer
    assert release_publish_preview(project)["identical_to"] is None
