"""Stored pages of large stages (agreement/stored.py): the counts, the series and the figures a
task stores equal what a page would count and draw now, after submits, a withdrawal and a
reopened item; a large stage's pages serve them and say how old they are; small stages are
counted live."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from agreement import selectors, stored
from agreement.models import StoredStageFigure, StoredStagePage
from annotation import services
from annotation.models import ItemStage, Role
from annotation.services.item_actions import items_act
from tests.agreement import test_views
from tests.agreement.test_views import LABELS, client_for
from tests.factories import annotate_stage, make_items, make_label_stage, make_member, make_project

study = test_views.study
_fast_passwords = test_views._fast_passwords
_on_commit = test_views._on_commit

pytestmark = pytest.mark.django_db


@pytest.fixture
def large(settings):
    """Every stage counts as large."""
    settings.AGREEMENT_STORED_FROM = 0
    settings.AGREEMENT_STORED_MAX_AGE = 3600


def stored_counts(stage) -> dict:
    assert stored.stage_page_store(stage_id=stage.pk)
    counts = dict(StoredStagePage.objects.get(pk=stage.pk).counts)
    counts.pop("resolved_values")
    # The disagreement list's counts, stored beside them, are what the list counts now.
    assert counts.pop("disagreements") == {
        show: selectors.disagreement_items(stage, show=show).count()
        for show in selectors.DISAGREEMENT_FILTERS
    }
    return counts


def test_stored_counts_follow_submits_withdrawal_and_reopen(large):
    project = make_project()
    stage = make_label_stage(project, overlap=2, choices=LABELS)
    make_items(project, 4)
    people = [make_member(project) for _ in range(3)]
    admin = make_member(project, Role.ADMIN)
    assert stored_counts(stage)["annotations"] == 0

    # Every item answered by two people: all decided.
    annotate_stage(stage, people[:2], lambda person, item: LABELS[0], seconds=None)
    counts = stored_counts(stage)
    assert counts == selectors.stage_counts(stage)
    assert counts["annotations"] == 8 and counts["annotators"] == 2 and counts["resolved"] == 4

    # An item reopened; a third person answers it, then withdraws.
    item_stage = ItemStage.objects.filter(stage=stage).order_by("pk").first()
    report = items_act(project, [item_stage.item_id], "reopen", by=admin, reason="check again")
    assert report.done == [item_stage.item_id]
    counts = stored_counts(stage)
    assert counts == selectors.stage_counts(stage)
    assert counts["resolved"] == 3 and counts["open"] == 1
    annotate_stage(stage, [people[2]], lambda person, item: LABELS[1])
    counts = stored_counts(stage)
    assert counts == selectors.stage_counts(stage) and counts["annotators"] == 3
    withdrawn, _ = services.annotations_withdraw(
        annotator_id=people[2].pk, project=project, reason="left the study"
    )
    assert withdrawn == 1
    counts = stored_counts(stage)
    assert counts == selectors.stage_counts(stage)
    assert counts["annotators"] == 2 and counts["annotations"] == 8


def test_a_large_stage_is_shown_from_its_stored_page_with_its_age(study, large):
    stored.stage_page_store(stage_id=study.stage.pk)
    moment = timezone.now() - timedelta(minutes=5)
    StoredStagePage.objects.filter(pk=study.stage.pk).update(
        stored_at=moment,
        counts={**StoredStagePage.objects.get(pk=study.stage.pk).counts, "annotations": 9999},
    )
    StoredStageFigure.objects.filter(stage=study.stage, name="annotators").update(
        svg="<svg>stored</svg>", stored_at=moment
    )
    client = client_for(study.researcher)
    page = client.get(reverse("agreement:stage", args=[study.project.slug, study.stage.slug]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "9,999" in text
    assert "as counted and drawn" in text and "5\xa0minutes ago" in text
    figure = client.get(
        reverse("agreement:plot", args=[study.project.slug, study.stage.slug, "annotators"])
    )
    assert figure.content == b"<svg>stored</svg>"
    tab = client.get(reverse("agreement:dashboard", args=[study.project.slug]))
    assert "9,999" in tab.content.decode() and "counted" in tab.content.decode()


def test_an_old_stored_page_is_stored_again_when_a_page_asks(
    study, large, settings, django_capture_on_commit_callbacks
):
    settings.AGREEMENT_STORED_MAX_AGE = 30
    stored.stage_page_store(stage_id=study.stage.pk)
    StoredStagePage.objects.filter(pk=study.stage.pk).update(
        stored_at=timezone.now() - timedelta(minutes=5), counts={"items": 6, "annotations": 1}
    )
    client = client_for(study.researcher)
    with django_capture_on_commit_callbacks(execute=True):
        client.get(reverse("agreement:stage", args=[study.project.slug, study.stage.slug]))
    # The task ran (in-process: no broker in the tests): the stored page is current.
    row = StoredStagePage.objects.get(pk=study.stage.pk)
    assert row.counts["annotations"] == selectors.stage_counts(study.stage)["annotations"]
    assert timezone.now() - row.stored_at < timedelta(minutes=1)
    assert row.queued_at is None


def test_a_small_stage_is_counted_live(study, settings):
    settings.AGREEMENT_STORED_FROM = 1000
    stored.stage_page_store(stage_id=study.stage.pk)
    StoredStagePage.objects.filter(pk=study.stage.pk).update(
        counts={"items": 6, "annotations": 9999}
    )
    shown = stored.stage_progress_shown(study.stage)
    assert shown.stored_at is None
    assert shown.progress == selectors.stage_progress(study.stage)


def test_the_stored_series_and_figures_are_what_a_request_would_draw(study, large):
    from agreement import figures

    stored.stage_page_store(stage_id=study.stage.pk)
    series = selectors.stage_progress_series(study.stage)
    assert stored.stage_progress_series_shown(study.stage) == series
    for plot in figures.PLOTS:
        svg, stored_at = stored.stage_figure_shown(study.stage, plot)
        assert stored_at is not None
        assert svg == StoredStageFigure.objects.get(stage=study.stage, name=plot).svg
        assert svg.startswith("<?xml") or "<svg" in svg[:400]


def test_only_the_refresh_redraws_the_figures_of_the_snapshots(study, large):
    stored.stage_page_store(stage_id=study.stage.pk)
    StoredStageFigure.objects.filter(stage=study.stage).update(svg="<svg>old</svg>")
    stored.stage_page_store(stage_id=study.stage.pk)
    svgs = dict(StoredStageFigure.objects.filter(stage=study.stage).values_list("name", "svg"))
    assert svgs["agreement"] == svgs["annotators"] == "<svg>old</svg>"
    assert svgs["progress"] != "<svg>old</svg>"
    stored.stage_page_store(stage_id=study.stage.pk, redraw=True)
    svgs = dict(StoredStageFigure.objects.filter(stage=study.stage).values_list("name", "svg"))
    assert "<svg>old</svg>" not in svgs.values()
