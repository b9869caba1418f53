"""The ratings page's import-determined counts (ratings/stored_counts.py): a large project shows
the counts a task stored, with their age, and asks for new ones when they are old or after an
import; a small project is counted on each request; the stored counts equal what a request would
count, and the analysis' data version follows them."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import ItemStage, Role
from ratings import selectors, services, stored_counts
from ratings.models import RatingsSetup, StoredRatingsCounts
from ratings.tasks import store_counts
from tests.factories import PASSWORD, make_member
from tests.ratings.conftest import csv_text

pytestmark = pytest.mark.django_db

CAPTION = "Pairs, items and imported ratings as counted"


@pytest.fixture
def imported(ratings_project, client):
    """Historic ratings of two items by two named raters, a researcher signed in."""
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(
            ["pair_id", "order", "connective", "rater", "rating"],
            [
                ["p1", "AB", "so", "r1", "7"],
                ["p1", "AB", "so", "r2", "8"],
                ["p2", "BA", "then", "r1", "3"],
            ],
        ),  # fmt: skip
        filename="old.csv",
    )
    researcher = make_member(ratings_project, role=Role.RESEARCHER)
    assert client.login(username=researcher.username, password=PASSWORD)
    return ratings_project


def progress_part(client, project) -> str:
    response = client.get(
        reverse("ratings:dashboard", args=[project.slug]),
        {"part": "progress"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    return response.content.decode()


def historic_stage_id(project) -> int:
    return RatingsSetup.objects.get(project=project).historic_stage_id


def test_counted_now_they_are_the_projects_items_and_imported_ratings(imported):
    counts = stored_counts.project_counts(imported.pk, historic_stage_id(imported))
    progress = selectors.progress(selectors.ratings_context(imported))
    assert progress["historic"] == {"items": 2, "ratings": 3, "raters": 2}
    assert (counts.historic_items, counts.historic_ratings, counts.historic_raters) == (2, 3, 2)
    assert progress["items_total"] == counts.regular_items and counts.regular_items > 0
    assert progress["pairs"] == counts.pairs and progress["counted_at"] is None


def test_a_small_project_is_counted_on_each_request(imported, client, settings):
    settings.RATINGS_STORED_FROM = 10**6
    page = progress_part(client, imported)
    assert "3 <small>imported</small>" in page and CAPTION not in page
    assert not StoredRatingsCounts.objects.filter(pk=imported.pk).exists()


def test_a_large_project_shows_the_stored_counts_with_their_age(imported, client, settings):
    settings.RATINGS_STORED_FROM = 1
    settings.RATINGS_STORED_MAX_AGE = 3600
    assert store_counts(imported.pk)
    stored = StoredRatingsCounts.objects.get(pk=imported.pk)
    counted = stored_counts.project_counts(imported.pk, historic_stage_id(imported))
    assert stored.counts == dataclasses.asdict(counted) and stored.total == counted.total
    assert stored.queued_at is None
    # A change the imports did not announce: the page keeps the stored figure, says when it
    # was counted, and its data version stays the stored one's.
    context = selectors.ratings_context(imported)
    version = selectors.data_version(context, None)
    ItemStage.objects.filter(stage_id=historic_stage_id(imported)).update(
        submitted_count=10, target_count=10
    )
    page = progress_part(client, imported)
    assert "3 <small>imported</small>" in page and CAPTION in page
    assert selectors.data_version(context, None) == version
    assert StoredRatingsCounts.objects.get(pk=imported.pk).queued_at is None  # not old yet
    # Old: the page still shows it and asks (once) for a new count, which counts the change.
    StoredRatingsCounts.objects.filter(pk=imported.pk).update(
        stored_at=timezone.now() - timedelta(hours=2)
    )
    assert "3 <small>imported</small>" in progress_part(client, imported)
    assert StoredRatingsCounts.objects.get(pk=imported.pk).queued_at is not None
    assert store_counts(imported.pk)
    page = progress_part(client, imported)
    assert "20 <small>imported</small>" in page and CAPTION in page
    assert selectors.data_version(context, None) != version


def test_an_import_asks_for_a_new_count_and_the_analysis_version_follows_it(
    imported, settings, django_capture_on_commit_callbacks
):
    settings.RATINGS_STORED_FROM = 1
    settings.RATINGS_STORED_MAX_AGE = 3600
    assert store_counts(imported.pk)
    services.analysis_refresh(project_id=imported.pk, source="historic", run_id=None)
    context = selectors.ratings_context(imported)
    assert selectors.stored_analysis(context, source="historic", run=None).fresh
    StoredRatingsCounts.objects.filter(pk=imported.pk).update(queued_at=None)
    services.historic_ratings_import(
        project=imported,
        content=csv_text(["pair_id", "order", "connective", "rating"], [["p2", "BA", "then", "4"]]),
        filename="more.csv",
    )
    # Asked for with the new analyses (the messages go after commit: not sent in this test).
    assert StoredRatingsCounts.objects.get(pk=imported.pk).queued_at is not None
    assert store_counts(imported.pk)
    assert selectors.progress(context)["historic"]["ratings"] == 4
    assert not selectors.stored_analysis(context, source="historic", run=None).fresh
    services.analysis_refresh(project_id=imported.pk, source="historic", run_id=None)
    state = selectors.stored_analysis(context, source="historic", run=None)
    assert state.fresh and state.analysis.report.n_ratings == 4


def test_answers_collected_here_do_not_ask_for_a_new_count(imported, settings):
    settings.RATINGS_STORED_FROM = 1
    assert store_counts(imported.pk)
    services.analyses_data_changed(project_id=imported.pk, imported=False)
    assert StoredRatingsCounts.objects.get(pk=imported.pk).queued_at is None


def test_a_project_grown_large_is_counted_now_and_asks_for_a_stored_count(
    imported, client, settings
):
    settings.RATINGS_STORED_FROM = 3
    page = progress_part(client, imported)
    assert "3 <small>imported</small>" in page and CAPTION not in page
    assert StoredRatingsCounts.objects.get(pk=imported.pk).queued_at is not None
    assert not store_counts(10**9)  # a project that is gone: nothing stored
