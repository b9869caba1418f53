"""The workers for real: Celery worker processes on Redis, the test database, outages.

* submits with a worker running are resolved, and a burst of them becomes a handful of agreement
  refreshes whose final figures equal a direct computation;
* a worker killed (SIGKILL) in the middle of a resolution loses nothing: the message it held comes
  back (acks_late + the visibility timeout) to the next worker;
* with Redis down, submits still succeed quickly (the publish error is logged); after Redis comes
  back empty, the sweeps resolve every item and bring the figures up to date; a frozen Redis
  (SIGSTOP) does not hang a submit either.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from django.db import connection, transaction

from agreement import selectors as research_selectors
from agreement.models import AgreementRefresh, AgreementSnapshot
from agreement.stats import fleiss_kappa
from agreement.tasks import sweep_agreement
from annotation.models import Annotation, Item, ItemStage, Resolution, Stage
from annotation.tasks import sweep_unresolved
from tests import processes
from tests.conftest import Workers, wait_for
from tests.factories import annotate_stage, make_items, make_label_stage, make_member, make_project

pytestmark = [pytest.mark.celery_worker, pytest.mark.postgres]

LABELS = ("causal", "temporal", "none")


@pytest.fixture
def workers(transactional_db, postgres):
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    from rungwise.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    pool = Workers(AGREEMENT_REFRESH_DELAY="0.5", AGREEMENT_REFRESH_INTERVAL="1.5", prefix="agree")
    yield pool
    pool.stop_all()
    app.conf.task_always_eager = previous
    app.control.purge()


def suite_redis() -> processes.Redis:
    """The Redis server scripts/with-services.sh started (same port and directory, so it is
    cleaned up): stop, freeze and restart it."""
    port = os.environ.get("RUNGWISE_REDIS_PORT")
    directory = os.environ.get("RUNGWISE_SERVICES_DIR")
    if not (port and directory):
        pytest.skip("needs the Redis of scripts/with-services.sh (RUNGWISE_REDIS_PORT)")
    return processes.Redis(Path(directory), port)


def patterned(person, item) -> str:
    index = int(item.external_id.rsplit("-", 1)[1])
    if (index + person.pk) % 4 == 0:
        return LABELS[(index + 1) % 3]
    return LABELS[index % 3]


def label_stage(items: int, annotators: int = 3):
    project = make_project()
    stage = make_label_stage(project, overlap=3, choices=LABELS)
    make_items(project, items)
    people = [make_member(project) for _ in range(annotators)]
    return stage, people


def all_resolved(stage: Stage, items: int) -> bool:
    return Resolution.objects.filter(item_stage__stage=stage).count() == items and not (
        ItemStage.objects.filter(stage=stage, state=ItemStage.State.RESOLVING).exists()
    )


def figures_current(stage: Stage) -> bool:
    refresh = AgreementRefresh.of_stage(stage.pk)
    return refresh.changes > 0 and not refresh.stale and refresh.queued_at is None


def assert_figures_match_the_annotations(stage: Stage) -> AgreementSnapshot:
    rows = Annotation.objects.filter(item_stage__stage=stage).values_list(
        "item_stage_id", "annotator_id", "payload"
    )
    frame = pd.DataFrame(
        [(item, rater, payload["value"]) for item, rater, payload in rows],
        columns=["item", "rater", "value"],
    )
    expected = fleiss_kappa(frame, categories=list(LABELS))
    latest = research_selectors.latest_snapshots(stage)["fleiss_kappa"]
    assert latest.n_annotations == len(frame)
    assert latest.value == pytest.approx(expected.value)
    assert (latest.ci_low, latest.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    return latest


def test_a_burst_of_submits_is_resolved_and_refreshed_a_handful_of_times(workers):
    workers.start()
    stage, people = label_stage(items=100)
    assert annotate_stage(stage, people, patterned, seconds=lambda person: 7.0) == 300
    wait_for(lambda: all_resolved(stage, 100), timeout=40)
    wait_for(lambda: figures_current(stage), timeout=20)
    changes = AgreementRefresh.of_stage(stage.pk).changes
    assert changes >= 100  # one per resolution (a redelivery may add one)
    refreshes = AgreementSnapshot.objects.filter(stage=stage, metric="fleiss_kappa").count()
    print(f"\n300 submits, {changes} changes, {refreshes} refreshes")
    assert 1 <= refreshes <= 15, f"{refreshes} refreshes for 100 resolutions"
    assert_figures_match_the_annotations(stage)
    annotators = research_selectors.latest_snapshots(stage)["annotator_agreement"]
    assert sorted(row["rater"] for row in annotators.details["annotators"]) == sorted(
        person.pk for person in people
    )


def _waiting_on_a_lock() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def test_a_worker_killed_mid_resolution_loses_nothing(workers):
    first = workers.start(CELERY_VISIBILITY_TIMEOUT="3")
    stage, people = label_stage(items=8)
    blocked_item = Item.objects.filter(project=stage.project).order_by("pk").first()
    holding, release = threading.Event(), threading.Event()

    def hold_the_item_row() -> None:
        # The resolve task updates the item's status at its end: holding the row keeps the task
        # in the middle of its transaction until the worker is killed.
        with transaction.atomic():
            Item.objects.select_for_update().get(pk=blocked_item.pk)
            holding.set()
            release.wait(60)
        connection.close()

    holder = threading.Thread(target=hold_the_item_row)
    holder.start()
    try:
        assert holding.wait(10)
        annotate_stage(stage, people, patterned)
        wait_for(lambda: _waiting_on_a_lock() >= 1, timeout=20)
        workers.kill(first)
    finally:
        release.set()
        holder.join(10)
    item_stage = ItemStage.objects.get(stage=stage, item=blocked_item)
    # The killed worker's transaction died with it: nothing half-written.
    wait_for(lambda: _waiting_on_a_lock() == 0, timeout=10)
    item_stage.refresh_from_db()
    assert item_stage.state == ItemStage.State.RESOLVING
    assert not Resolution.objects.filter(item_stage=item_stage).exists()

    time.sleep(3.5)  # past the visibility timeout: the held message is visible again
    workers.start(CELERY_VISIBILITY_TIMEOUT="3")
    wait_for(lambda: all_resolved(stage, 8), timeout=30)
    item_stage.refresh_from_db()
    assert item_stage.state == ItemStage.State.RESOLVED
    assert item_stage.resolution.n_annotations == 3
    assert Annotation.objects.filter(item_stage__stage=stage).count() == 24
    wait_for(lambda: figures_current(stage), timeout=20)
    assert_figures_match_the_annotations(stage)


def test_submits_survive_a_redis_outage_and_the_sweeps_catch_up(workers, caplog):
    redis = suite_redis()
    workers.start()
    stage, people = label_stage(items=10)
    annotate_stage(stage, people, patterned)  # the first ten items, with Redis up
    wait_for(lambda: all_resolved(stage, 10), timeout=30)

    redis.shutdown()
    try:
        make_items(stage.project, 10, prefix="later")
        started = time.monotonic()
        assert annotate_stage(stage, people, patterned) == 30  # nothing raised
        per_submit = (time.monotonic() - started) / 30
        print(f"\nRedis down: {per_submit * 1000:.0f} ms per next + submit")
        assert per_submit < 1.0, f"{per_submit:.2f} s per submit with Redis down"
        assert "could not run or enqueue" in caplog.text
        assert Annotation.objects.filter(item_stage__stage=stage).count() == 60
        assert ItemStage.objects.filter(stage=stage, state=ItemStage.State.RESOLVING).count() == 10
    finally:
        redis.start()

    # Redis came back empty: every message of the outage is gone. The worker reconnects and the
    # beat's sweeps (sent here by hand) repair what was missed.
    from rungwise.celery import app

    wait_for(lambda: app.control.ping(timeout=0.5), timeout=30)
    sweep_unresolved.delay(0)
    wait_for(lambda: all_resolved(stage, 20), timeout=30)
    sweep_agreement.delay(0)
    wait_for(lambda: figures_current(stage), timeout=20)
    assert_figures_match_the_annotations(stage)


def test_a_frozen_redis_does_not_hang_a_submit(workers):
    redis = suite_redis()
    workers.start()
    stage, people = label_stage(items=2)
    # Two of the three annotations of each item, with Redis answering.
    annotate_stage(stage, people[:2], patterned)
    os.kill(redis.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        annotate_stage(stage, people[2:], patterned)  # completes both items: two publishes
        elapsed = time.monotonic() - started
    finally:
        os.kill(redis.pid, signal.SIGCONT)
    assert Annotation.objects.filter(item_stage__stage=stage).count() == 6
    print(f"\nRedis frozen: {elapsed:.1f} s for two submits that each publish")
    # Bounded by the socket timeouts (settings: 3 s, one retry) per publish, not forever.
    assert elapsed < 30, f"{elapsed:.1f} s for two submits with Redis frozen"
    sweep_unresolved.delay(0)
    wait_for(lambda: all_resolved(stage, 2), timeout=30)


def test_a_release_and_an_import_started_while_redis_is_down_finish_after_the_sweep(
    workers, settings, tmp_path
):
    """Publishing and importing answer at once with Redis down (the message is lost); when
    Redis comes back empty, the beat's stuck sweeps (sent here by hand) get both done by the
    real worker. Before these sweeps the release stayed "building" and refused every publish."""
    import io

    from imports.models import ImportBatch
    from imports.services import import_batch_create, import_batch_start
    from imports.tasks import sweep_stuck_imports
    from releases.models import Release
    from releases.services import release_publish
    from releases.tasks import sweep_stuck_releases
    from rungwise.celery import app

    settings.MEDIA_ROOT = tmp_path / "media"
    redis = suite_redis()
    worker_media = {"MEDIA_ROOT": str(settings.MEDIA_ROOT)}
    workers.start(**worker_media)
    stage, _people = label_stage(items=2)
    Item.objects.filter(project=stage.project).update(status=Item.Status.ACCEPTED)

    redis.shutdown()
    try:
        release = release_publish(project=stage.project, user=None)
        batch = import_batch_create(
            project=stage.project, user=None, filename="late.jsonl", options={},
            fileobj=io.BytesIO(b'{"id": "late-1", "text": "It rained, so the game stopped."}\n'),
        )  # fmt: skip
        import_batch_start(batch=batch, run_inline=False)
    finally:
        redis.start()
    release.refresh_from_db()
    batch.refresh_from_db()
    assert (release.status, batch.status) == ("building", "pending")

    wait_for(lambda: app.control.ping(timeout=0.5), timeout=30)
    Release.objects.filter(pk=release.pk).update(created_at=release.created_at - timedelta(hours=1))
    ImportBatch.objects.filter(pk=batch.pk).update(created_at=batch.created_at - timedelta(hours=1))
    sweep_stuck_releases.delay()
    sweep_stuck_imports.delay()
    wait_for(lambda: Release.objects.get(pk=release.pk).status == "published", timeout=60)
    wait_for(lambda: ImportBatch.objects.get(pk=batch.pk).status == "succeeded", timeout=60)
    assert Item.objects.filter(project=stage.project, external_id="late-1").exists()
