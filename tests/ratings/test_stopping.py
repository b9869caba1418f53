"""Live stopping of a ratings study (ratings/stopping.py): a clear ordered pair stops at the
floor, an unclear one runs to the cap, a run is safe to repeat, stages without the option pay
no query, annotators racing the runs on PostgreSQL get no extra slot and lose no answer, and the
real worker stops a study's settled pairs."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import Annotation, Assignment, Item, ItemStage
from ratings import selectors, services, stopping, tasks
from ratings.models import LiveStopping, StoredAnalysis
from tests.conftest import Workers, wait_for
from tests.factories import make_member
from tests.ratings.conftest import PAIRS, make_ratings_project, pairs_csv
from tests.threads import run_annotators

FLOOR, CAP = 3, 5
#: p1 is clear from the first ratings (``because`` wins by far); p2's ratings spread so widely
#: that its label is never settled before the cap.
UNCLEAR = {
    "because": [2, 9, 4, 8, 3],
    "so": [9, 2, 8, 3, 7],
    "then": [5, 5, 9, 1, 6],
    "after": [1, 8, 2, 9, 5],
}


def rating(item: Item, rater_index: int) -> int:
    pair, connective = item.payload["pair_id"], item.payload["connective"]
    if pair == "p1":
        return 10 if connective == "because" else 2
    return UNCLEAR[connective][rater_index % CAP]


def study(**options):
    options.setdefault("stopping", {"floor": FLOOR})
    project = make_ratings_project(overlap=CAP, **options)
    services.pairs_import(project=project, content=pairs_csv(PAIRS[:2]), filename="pairs.csv")
    raters = [make_member(project) for _ in range(CAP + 1)]
    return project, selectors.ratings_context(project).setup.rating_stage, raters


def rate_everything(stage, rater, index: int, capture) -> int:
    """The rater rates every item they are given, each submit committed (and its after-commit
    work run) before the next lease; returns how many they rated."""
    count = 0
    while True:
        with capture(execute=True):
            access = access_stage_for_annotator(user=rater, stage_id=stage.pk)
            assignment = engine.assignment_next(annotator=rater, stage=access)
            if assignment is None:
                return count
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=rater,
                payload={"value": rating(assignment.item_stage.item, index)},
            )
        count += 1


def by_pair(stage) -> dict[str, list[ItemStage]]:
    found: dict[str, list[ItemStage]] = {}
    for item_stage in ItemStage.objects.filter(
        stage=stage, item__purpose=Item.Purpose.REGULAR
    ).select_related("item"):
        found.setdefault(item_stage.item.payload["pair_id"], []).append(item_stage)
    return found


@pytest.mark.django_db
def test_a_clear_pair_stops_at_the_floor_and_an_unclear_one_runs_to_the_cap(
    django_capture_on_commit_callbacks,
):
    project, stage, raters = study()
    # One rater after another, each through every item they are given.
    rated = [
        rate_everything(stage, rater, index, django_capture_on_commit_callbacks)
        for index, rater in enumerate(raters)
    ]
    # Three raters rate all 16 items; then only p2's 8 are left for the fourth and the fifth.
    assert rated == [16, 16, 16, 8, 8, 0]
    pairs = by_pair(stage)
    for item_stage in pairs["p1"]:
        assert item_stage.stopped_at is not None
        assert item_stage.state == ItemStage.State.RESOLVED
        assert item_stage.submitted_count == item_stage.target_count == FLOOR
    for item_stage in pairs["p2"]:
        assert item_stage.stopped_at is None and item_stage.state == ItemStage.State.RESOLVED
        assert item_stage.submitted_count == item_stage.target_count == CAP
    summary = selectors.progress(selectors.ratings_context(project))["stopping"]
    assert summary == {
        "on": True,
        "floor": FLOOR,
        "cap": CAP,
        "confidence_percent": 95.0,
        "mean_ci_width": None,
        "items": 8,
        "pairs": 2,
        "saved": 8 * (CAP - FLOOR),
        "needed": 16 * CAP,
    }


@pytest.mark.django_db
def test_a_run_is_safe_to_repeat_and_reads_only_pairs_rated_since_the_last(
    django_capture_on_commit_callbacks,
):
    project, stage, raters = study()
    for index, rater in enumerate(raters[:FLOOR]):
        rate_everything(stage, rater, index, django_capture_on_commit_callbacks)
    stopped = set(ItemStage.objects.filter(stage=stage).exclude(stopped_at=None))
    assert len(stopped) == 8
    state = LiveStopping.objects.get(stage=stage)
    assert tasks.stop_settled(stage.pk) == 0
    # a run reads the ordered pairs rated since the previous one began, less a minute
    Annotation.objects.update(created_at=timezone.now() - timedelta(hours=1))
    assert stopping.stopping_run(stage_id=stage.pk).pairs_read == 0
    LiveStopping.objects.filter(pk=state.pk).update(read_from=None)  # as on a first run
    again = stopping.stopping_run(stage_id=stage.pk)
    assert (again.pairs_read, again.pairs_settled, again.stopped) == (4, 2, 0)
    assert set(ItemStage.objects.filter(stage=stage).exclude(stopped_at=None)) == stopped
    assert LiveStopping.objects.get(pk=state.pk).runs > state.runs


@pytest.mark.django_db
def test_stopping_is_off_by_default_and_other_stages_pay_no_query(
    django_capture_on_commit_callbacks,
):
    project, stage, raters = study(stopping=None)
    assert stopping.stopping_rule(stage) is None
    for index, rater in enumerate(raters[:FLOOR]):
        rate_everything(stage, rater, index, django_capture_on_commit_callbacks)
    assert not ItemStage.objects.filter(stage=stage).exclude(stopped_at=None).exists()
    assert selectors.progress(selectors.ratings_context(project))["stopping"] is None
    with CaptureQueriesContext(connection) as queries:
        stopping.answers_stored(stage, [1, 2, 3])
    assert len(queries) == 0


@pytest.mark.django_db
def test_turning_it_on_counts_the_ratings_so_far_and_bad_settings_are_refused(
    django_capture_on_commit_callbacks,
):
    project, stage, raters = study(stopping=None)
    for index, rater in enumerate(raters[:FLOOR]):
        rate_everything(stage, rater, index, django_capture_on_commit_callbacks)
    with pytest.raises(ApplicationError, match="above the stage's 5 ratings"):
        services.stopping_set(project=project, floor=CAP + 1)
    with pytest.raises(ApplicationError) as refused:
        services.stopping_set(project=project, floor=FLOOR, confidence=1.5)
    assert "stopping.confidence" in refused.value.extra
    with django_capture_on_commit_callbacks(execute=True):
        stage = services.stopping_set(project=project, floor=FLOOR, confidence=0.9)
    assert stage.config["stopping"] == {"floor": FLOOR, "confidence": 0.9, "mean_ci_width": None}
    assert ItemStage.objects.filter(stage=stage).exclude(stopped_at=None).count() == 8
    stage = services.stopping_set(project=project, on=False)
    assert "stopping" not in stage.config
    summary = selectors.progress(selectors.ratings_context(project))["stopping"]
    assert summary["on"] is False and summary["items"] == 8  # stopped items stay stopped


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_raters_racing_the_runs_get_no_extra_slot_and_lose_no_answer(postgres):
    """Five raters at once, every submit followed by a run in the submitting thread (tasks in
    process, after commit): nobody is given an item past its target, no answer is lost, no
    slot reopens, and the clear pairs stop before the cap."""
    project, stage, raters = study()
    raters = raters[:CAP]
    # The ratings page's analysis is not this test's business: its debounce marks are set, as
    # if a refresh were on its way, so that no resolution computes it in a rater's thread.
    for source in selectors.SOURCES:
        StoredAnalysis.objects.update_or_create(
            project=project, source=source, run_key=0, defaults={"queued_at": timezone.now()}
        )
    barrier = threading.Barrier(len(raters))

    def rater_loop(rater, index):
        barrier.wait()
        for _ in range(40):  # a bound, never reached when all is well
            access = access_stage_for_annotator(user=rater, stage_id=stage.pk)
            assignment = engine.assignment_next(annotator=rater, stage=access)
            if assignment is None:
                return
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=rater,
                payload={"value": rating(assignment.item_stage.item, index)},
            )

    run_annotators(rater_loop, raters, timeout=300)

    pairs = by_pair(stage)
    for item_stages in pairs.values():
        for item_stage in item_stages:
            answers = Annotation.objects.filter(item_stage=item_stage).count()
            assert item_stage.state == ItemStage.State.RESOLVED, item_stage
            assert item_stage.leased_count == 0
            assert item_stage.submitted_count == answers == item_stage.target_count <= CAP
            assert answers >= FLOOR
    assert all(item_stage.target_count == CAP for item_stage in pairs["p2"])
    assert any(item_stage.stopped_at for item_stage in pairs["p1"])
    assert not Assignment.objects.filter(stage=stage, status=Assignment.Status.ACTIVE).exists()
    submitted = Assignment.objects.filter(stage=stage, status=Assignment.Status.SUBMITTED)
    assert submitted.count() == Annotation.objects.filter(item_stage__stage=stage).count()


@pytest.fixture
def worker(transactional_db, postgres):
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    pool = Workers(RATINGS_STOPPING_DELAY="0.5", prefix="stopping")
    pool.start()
    yield pool
    pool.stop_all()
    app.conf.task_always_eager = previous
    app.control.purge()


@pytest.mark.celery_worker
@pytest.mark.postgres
def test_the_worker_stops_the_settled_pairs_after_the_ratings_are_stored(worker):
    project, stage, raters = study()

    def rate_all(rater, index):
        while (assignment := engine.assignment_next(annotator=rater, stage=stage)) is not None:
            engine.annotation_submit(
                assignment_id=assignment.pk,
                annotator=rater,
                payload={"value": rating(assignment.item_stage.item, index)},
            )

    for index, rater in enumerate(raters[:FLOOR]):
        rate_all(rater, index)

    def clear_pairs_stopped() -> bool:
        return (
            ItemStage.objects.filter(stage=stage, state=ItemStage.State.RESOLVED)
            .exclude(stopped_at=None)
            .count()
            == 8
        )

    wait_for(clear_pairs_stopped, timeout=60)
    rate_all(raters[FLOOR], FLOOR)
    assert Annotation.objects.filter(item_stage__stage=stage).count() == 16 * FLOOR + 8


@pytest.mark.django_db
def test_the_demo_study_has_pairs_stopped_early_and_pairs_still_collecting(
    django_capture_on_commit_callbacks,
):
    from ratings.fixtures import stopping_demo

    with django_capture_on_commit_callbacks(execute=True):
        project = stopping_demo.seed(users={})
    summary = selectors.progress(selectors.ratings_context(project))["stopping"]
    assert summary["on"] and summary["floor"] == stopping_demo.FLOOR
    assert 0 < summary["pairs"] < 2 * len(stopping_demo.PAIR_IDS), summary
    assert summary["saved"] == summary["items"] * (stopping_demo.OVERLAP - stopping_demo.RATERS)
    stage = selectors.ratings_context(project).setup.rating_stage
    still_open = ItemStage.objects.filter(stage=stage, state=ItemStage.State.OPEN, stopped_at=None)
    assert still_open.count() == 8 * len(stopping_demo.PAIR_IDS) - summary["items"]
    assert stopping_demo.seed(users={}) == project  # safe to run again
