"""Ratings reads: querysets into the long frame ratings.stats expects, progress, attention-check
answers, and the cached analysis."""

from __future__ import annotations

import numpy as np
import pytest

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Role
from ratings import selectors, services
from ratings.models import RatingsSetup
from tests.factories import make_member
from tests.ratings.conftest import csv_text

pytestmark = pytest.mark.django_db

CHECKS = csv_text(
    ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "expected_min", "expected_max", "feedback"],
    [
        ["check-1", "He was born.", "He graduated.", "attention_check", "after", "", "3", ""],
        ["practice-1", "The glass fell.", "It broke.", "practice", "so", "7", "10", "Falls break glass."],
    ],
)  # fmt: skip


def rate_everything(project, rater, value, stage_id):
    """The rater rates every item the engine hands out in the stage with `value` (a number, or a
    function of the item)."""
    while True:
        stage = access_stage_for_annotator(user=rater, stage_id=stage_id)
        assignment = engine.assignment_next(annotator=rater, stage=stage)
        if assignment is None:
            return
        item = assignment.item_stage.item
        rating = value(item) if callable(value) else value
        payload = (
            {"value": rating} if rating is not None else {"cannot_judge": True, "reason": "odd"}
        )
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=rater, payload=payload, seconds_spent=3.0
        )


@pytest.fixture
def rated(ratings_project, django_capture_on_commit_callbacks):
    """Three pairs rated live by two raters (one of them fails the attention check), plus
    imported anonymous ratings of one item."""
    services.pairs_import(project=ratings_project, content=CHECKS, filename="checks.csv")
    setup = RatingsSetup.objects.get(project=ratings_project)
    alice = make_member(ratings_project, Role.ANNOTATOR, username="alice")
    bob = make_member(ratings_project, Role.ANNOTATOR, username="bob")
    with django_capture_on_commit_callbacks(execute=True):
        # Practice first (the rating stage's after_stage rule): alice gives 9 (expected 7–10),
        # bob 3 (off the range).
        rate_everything(ratings_project, alice, 9, setup.practice_stage_id)
        rate_everything(ratings_project, bob, 3, setup.practice_stage_id)
        rate_everything(
            ratings_project,
            alice,
            lambda item: 2 if item.purpose == "attention_check" else 8,
            setup.rating_stage_id,
        )
        rate_everything(
            ratings_project, bob,
            lambda item: 9 if item.purpose == "attention_check" else (None if item.external_id == "p1:AB:so" else 4),
            setup.rating_stage_id,
        )  # fmt: skip
    services.historic_ratings_import(
        project=ratings_project,
        content=csv_text(
            ["pair_id", "order", "connective", "ratings"], [["p2", "BA", "then", "[7, 8, 9]"]]
        ),
        filename="old.csv",
    )
    return ratings_project


def test_the_long_frame_has_one_row_per_rating_of_regular_items(rated):
    context = selectors.ratings_context(rated)
    live = selectors.ratings_frame(context, source="live")
    assert list(live.columns) == [
        "item_key", "pair_id", "order", "connective", "rater", "rating", "source", "cannot_judge", "seconds"
    ]  # fmt: skip
    assert len(live) == 48  # 24 items × 2 raters; the check and the practice item are not there
    assert set(live["rater"]) == {"alice", "bob"} and set(live["source"]) == {"live"}
    cannot = live.loc[live["cannot_judge"]]
    assert cannot[["item_key", "rater"]].values.tolist() == [["p1:AB:so", "bob"]]
    assert np.isnan(cannot["rating"].iloc[0])
    row = live.loc[(live["item_key"] == "p2:BA:then") & (live["rater"] == "alice")].iloc[0]
    assert (row.pair_id, row.order, row.connective, row.rating, row.seconds) == (
        "p2",
        "BA",
        "then",
        8,
        3.0,
    )
    historic = selectors.ratings_frame(context, source="historic")
    assert sorted(historic["rating"]) == [7, 8, 9]
    assert historic["rater"].isna().all() and set(historic["source"]) == {"historic"}
    both = selectors.ratings_frame(context, source="all")
    assert len(both) == 51


def test_reading_the_frame_costs_the_same_queries_whatever_the_size(
    rated, django_assert_max_num_queries
):
    context = selectors.ratings_context(rated)
    items = selectors.items_frame(rated)
    with django_assert_max_num_queries(2):
        selectors.ratings_frame(context, source="all", items=items)


def test_progress_counts(rated):
    progress = selectors.progress(selectors.ratings_context(rated))
    assert progress["pairs"] == 3 and progress["items_total"] == 24
    live = progress["live"]
    assert (live["items"], live["needed"], live["collected"], live["raters"]) == (24, 72, 48, 2)
    assert live["cannot_judge"] == 1 and live["percent"] == 67 and live["complete"] == 0
    assert progress["checks"] == {"items": 1, "answers": 2}
    assert progress["practice"] == {"items": 1, "answers": 2}
    assert progress["historic"] == {"items": 1, "ratings": 3, "raters": 0}


def test_attention_check_and_practice_answers_carry_the_expected_range(rated):
    context = selectors.ratings_context(rated)
    checks = selectors.attention_check_answers(context).sort_values("rater")
    assert checks[["rater", "item", "rating", "expected_max"]].values.tolist() == [
        ["alice", "check-1", 2, 3],
        ["bob", "check-1", 9, 3],
    ]
    practice = selectors.practice_answers(context).sort_values("rater")
    assert practice[["rater", "item", "rating", "expected_min"]].values.tolist() == [
        ["alice", "practice-1", 9, 7],
        ["bob", "practice-1", 3, 7],
    ]


def test_the_analysis_flags_the_failed_check_and_is_cached_until_data_change(rated, monkeypatch):
    context = selectors.ratings_context(rated)
    calls = []
    original = selectors.compute_analysis
    monkeypatch.setattr(
        selectors, "compute_analysis", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    first = selectors.analysis(context, source="live", run=None)
    raters = first.report.tables["raters"].set_index("rater")
    assert raters.loc["bob", "checks_failed"] == 1 and raters.loc["alice", "checks_failed"] == 0
    assert raters.loc["alice", "practice_done"] == 1 and raters.loc["alice", "practice_off"] == 0
    assert raters.loc["bob", "practice_done"] == 1 and raters.loc["bob", "practice_off"] == 1
    assert set(first.plots) == {"distributions", "means"}
    selectors.analysis(context, source="live", run=None)
    assert len(calls) == 1
    services.historic_ratings_import(
        project=rated,
        content=csv_text(["pair_id", "order", "connective", "rating"], [["p1", "AB", "so", "5"]]),
        filename="more.csv",
    )
    selectors.analysis(context, source="live", run=None)
    assert len(calls) == 2


def test_the_data_version_follows_imported_live_and_edited_ratings(rated):
    """Imported ratings are read by their item stages' counters, live ones by their
    annotations: an import of one more rating of an item already imported, a new live rating
    and an edited one each give a new version; reading again without a change does not."""
    from annotation.models import Annotation

    context = selectors.ratings_context(rated)
    first = selectors.data_version(context, None)
    assert selectors.data_version(context, None) == first
    services.historic_ratings_import(
        project=rated,
        content=csv_text(["pair_id", "order", "connective", "rating"], [["p2", "BA", "then", "4"]]),
        filename="one-more.csv",
    )
    after_import = selectors.data_version(context, None)
    assert after_import != first
    # An edit: the engine keeps the old row (no longer current) and stores a new current one.
    answer = Annotation.objects.filter(item_stage__stage_id=context.setup.rating_stage_id).first()
    Annotation.objects.filter(pk=answer.pk).update(is_current=False)
    answer.pk = None
    answer.payload = {"value": 1}
    answer.is_current = True
    answer.save()
    assert selectors.data_version(context, None) != after_import


def test_progress_counts_named_historic_raters_again_after_an_import(rated):
    context = selectors.ratings_context(rated)
    assert selectors.progress(context)["historic"]["raters"] == 0
    services.historic_ratings_import(
        project=rated,
        content=csv_text(
            ["pair_id", "order", "connective", "rater", "rating"],
            [["p1", "AB", "so", "r1", "5"], ["p1", "AB", "then", "r2", "6"]],
        ),
        filename="named.csv",
    )
    assert selectors.progress(context)["historic"] == {"items": 3, "ratings": 5, "raters": 2}


def test_the_stored_analysis_is_read_and_unpickled_once_per_computation(
    rated, django_assert_num_queries, monkeypatch
):
    import pickle

    context = selectors.ratings_context(rated)
    services.analysis_refresh(project_id=rated.pk, source="live", run_id=None)
    loads = []

    def counted_loads(data):
        # Analyses only: the cache's own values (the historic raters' count) are pickled too.
        loaded = pickle.Unpickler(__import__("io").BytesIO(data)).load()
        if isinstance(loaded, selectors.Analysis):
            loads.append(1)
        return loaded

    monkeypatch.setattr(pickle, "loads", counted_loads)
    first = selectors.stored_analysis(context, source="live", run=None)
    assert first.fresh and first.analysis is not None and loads == [1]
    # Again: the row's fields only (no content), the version's aggregates — the live
    # annotations, and the import-determined counts (ratings/stored_counts.py: the stored row,
    # none here, then the items, the historic item stages and the pairs) — no unpickling.
    with django_assert_num_queries(6):
        again = selectors.stored_analysis(context, source="live", run=None)
    assert loads == [1] and again.fresh
    assert again.analysis.report.tables["raters"].equals(first.analysis.report.tables["raters"])
    # A new computation (new data) is read again.
    services.historic_ratings_import(
        project=rated,
        content=csv_text(["pair_id", "order", "connective", "rating"], [["p1", "AB", "so", "5"]]),
        filename="more.csv",
    )
    services.analysis_refresh(project_id=rated.pk, source="live", run_id=None)
    assert selectors.stored_analysis(context, source="live", run=None).fresh
    assert loads == [1, 1]


def test_the_page_reads_a_slim_copy_without_the_tables_only_downloads_show(rated):
    from django.utils import timezone

    from ratings.models import StoredAnalysis

    context = selectors.ratings_context(rated)
    services.analysis_refresh(project_id=rated.pk, source="live", run_id=None)
    page = selectors.stored_analysis(context, source="live", run=None, for_page=True)
    whole = selectors.stored_analysis(context, source="live", run=None)
    assert page.fresh and whole.fresh
    left_out = set(whole.analysis.report.tables) - set(page.analysis.report.tables)
    assert left_out == {"items", "labels"}  # model_labels too, with a model run
    for name, frame in page.analysis.report.tables.items():
        assert frame.equals(whole.analysis.report.tables[name])
    assert page.analysis.report.figures == whole.analysis.report.figures
    assert page.analysis.plots == whole.analysis.plots
    # Stored before the slim copy existed: the page reads the whole analysis.
    StoredAnalysis.objects.filter(project=rated, source="live").update(
        page=None, computed_at=timezone.now()
    )
    old = selectors.stored_analysis(context, source="live", run=None, for_page=True)
    assert old.fresh and "items" in old.analysis.report.tables
