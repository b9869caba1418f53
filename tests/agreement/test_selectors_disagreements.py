"""The disagreement list's sparse filters (agreement/selectors.py, ``disagreement_items(…,
few=True)``): the candidates read first from the resolutions' partial index list the same rows,
in the same order, as the walk of the stage's index."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agreement import selectors
from annotation import keyset
from annotation.models import ItemStage, Resolution
from tests.agreement import test_views
from tests.agreement.test_views import client_for, waiting

study = test_views.study
_fast_passwords = test_views._fast_passwords
_on_commit = test_views._on_commit

pytestmark = pytest.mark.django_db


def _walk(stage, show: str, few: bool) -> list[int]:
    """Every row of the list, one keyset page of one row at a time."""
    seen, after = [], None
    while True:
        page = keyset.keyset_page(
            selectors.disagreement_items(stage, show=show, few=few),
            key=selectors.DECIDED_AT,
            per_page=1,
            after=after,
        )
        seen += [row.pk for row in page.rows]
        if page.next_cursor is None:
            return seen
        after = page.next_cursor
        assert len(seen) < 50


@pytest.mark.parametrize("show", list(selectors.DISAGREEMENT_FILTERS))
def test_reading_the_candidates_first_lists_the_same_rows_in_the_same_order(study, show):
    first, _ = waiting(study)
    Resolution.objects.filter(item_stage=first).update(
        status=Resolution.Status.ADJUDICATED, value="causal"
    )
    ItemStage.objects.filter(pk=first.pk).update(state=ItemStage.State.RESOLVED)
    walked = _walk(study.stage, show, few=False)
    assert _walk(study.stage, show, few=True) == walked
    assert [s.pk for s in selectors.disagreement_items(study.stage, show=show, few=True)] == walked
    if show in ("ties", "adjudicated"):
        assert len(walked) == 1  # one still waiting, one decided by a reviewer


def test_a_sparse_filter_without_candidates_lists_nothing_without_reading_the_stage(
    study, django_assert_num_queries
):
    Resolution.objects.filter(item_stage__stage=study.stage).update(status="majority")
    ItemStage.objects.filter(stage=study.stage).update(state=ItemStage.State.RESOLVED)
    assert selectors.disagreement_candidates(study.stage, "ties") == []
    # Two reads of the candidates (resolutions, waiting item stages); the list itself is
    # known to be empty without a query.
    with django_assert_num_queries(2):
        assert list(selectors.disagreement_items(study.stage, show="ties", few=True)) == []


def test_the_page_reads_candidates_first_only_when_its_count_is_small(study, monkeypatch):
    calls = []
    original = selectors.disagreement_candidates

    def recorded(stage, show):
        calls.append(show)
        return original(stage, show)

    monkeypatch.setattr(selectors, "disagreement_candidates", recorded)
    url = reverse("agreement:disagreements", args=[study.project.slug, study.stage.slug])
    client = client_for(study.researcher)
    ties = client.get(url, {"show": "ties"})
    assert ties.context["count"] == 2 and calls == ["ties"]
    assert len(ties.context["rows"]) == 2
    monkeypatch.setattr(selectors, "FEW_LISTED", 1)
    again = client.get(url, {"show": "ties"})
    assert calls == ["ties"] and len(again.context["rows"]) == 2
    client.get(url, {"show": "split"})
    assert calls == ["ties"]  # a dense filter always walks
