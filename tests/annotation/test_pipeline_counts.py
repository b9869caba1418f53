"""The project home's pipeline counts (annotation/pipeline_counts.py): a large project shows
the counts a task stored, with their age, and asks for new ones when they are old; a small
project is counted on each request; the stored counts equal what a request would count."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import pipeline_counts
from annotation.models import Resolution, Role, StoredPipelineCounts
from annotation.tasks import store_pipeline_counts
from tests.annotation.test_routing import work
from tests.factories import (
    PASSWORD,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db
work = work  # the fixture, shared with the routing tests


@pytest.fixture
def resolved(work, client):
    """Three items through a verify stage (two accepted, one rejected), a researcher signed in."""
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    make_label_stage(project, overlap=1)
    make_items(project, 3)
    alice = make_member(project)
    work(
        verify, [alice], lambda person, item: "reject" if item.external_id.endswith("2") else "keep"
    )
    researcher = make_member(project, role=Role.RESEARCHER)
    assert client.login(username=researcher.username, password=PASSWORD)
    return project


def home(client, project) -> str:
    return client.get(reverse("annotation:project", args=[project.slug])).content.decode()


def test_a_small_project_is_counted_on_each_request(resolved, client, settings):
    settings.PIPELINE_STORED_FROM = 1000
    page = home(client, resolved)
    assert "accept · 2" in page and "Items as counted" not in page
    assert not StoredPipelineCounts.objects.filter(pk=resolved.pk, stored_at__isnull=False).exists()


def test_a_large_project_shows_the_stored_counts_with_their_age(resolved, client, settings):
    settings.PIPELINE_STORED_FROM = 1
    settings.PIPELINE_STORED_MAX_AGE = 3600
    assert store_pipeline_counts(resolved.pk)
    stored = StoredPipelineCounts.objects.get(pk=resolved.pk)
    assert stored.total == 3 and stored.queued_at is None
    assert sorted(map(tuple, stored.counts)) == sorted(
        (slug, outcome, n)
        for (slug, outcome), n in pipeline_counts.pipeline_counts(resolved.pk).items()
    )
    # A change after the count: the page keeps the stored figure and says when it was counted.
    Resolution.objects.filter(item_stage__stage__slug="verify", outcome="reject").update(
        outcome="accept"
    )
    page = home(client, resolved)
    assert "accept · 2" in page and "Items as counted" in page
    assert StoredPipelineCounts.objects.get(pk=resolved.pk).queued_at is None  # not old yet
    # Old: the page still shows it and asks (once) for a new count, which counts the change.
    StoredPipelineCounts.objects.filter(pk=resolved.pk).update(
        stored_at=timezone.now() - timedelta(hours=2)
    )
    assert "accept · 2" in home(client, resolved)
    assert StoredPipelineCounts.objects.get(pk=resolved.pk).queued_at is not None
    assert store_pipeline_counts(resolved.pk)
    page = home(client, resolved)
    assert "accept · 3" in page and "Items as counted" in page


def test_a_project_grown_large_is_counted_now_and_asks_for_a_stored_count(
    resolved, client, settings
):
    settings.PIPELINE_STORED_FROM = 3
    page = home(client, resolved)
    assert "accept · 2" in page and "Items as counted" not in page
    assert StoredPipelineCounts.objects.get(pk=resolved.pk).queued_at is not None
    assert not store_pipeline_counts(10**9)  # a project that is gone: nothing stored
