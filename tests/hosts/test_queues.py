"""Queues by kind of work (rungwise/settings.py, "Queues by kind of work"): every task of the
apps is routed on purpose, bulk work never on the interactive queue; and with a worker per
queue, a bulk task that cannot finish does not delay a resolution."""

from __future__ import annotations

import fnmatch
import io
import os

import psycopg
import pytest
from django.conf import settings

from annotation import services
from annotation.models import ItemStage, Role
from imports.models import ImportBatch
from imports.services import import_batch_create
from imports.tasks import run_import
from rungwise.celery import app
from tests.conftest import _test_database_url, wait_for
from tests.factories import make_items, make_member, make_project, make_verify_stage
from tests.hosts.conftest import start_queue_worker, stop_worker

APPS = ("annotation.", "agreement.", "imports.", "releases.", "ratings.", "crowd.", "llm.",
        "quality.", "studio.", "review.", "graphs.", "narratives.", "api.", "webhooks.")  # fmt: skip


def queue_of(task_name: str) -> str:
    return app.amqp.router.route({}, task_name)["queue"].name


def test_every_task_of_the_apps_is_routed_to_a_queue_on_purpose():
    app.loader.import_default_modules()
    tasks = sorted(name for name in app.tasks if name.startswith(APPS))
    assert len(tasks) >= 20
    patterns = [*settings.BULK_TASKS, *settings.INTERACTIVE_TASKS]
    unrouted = [name for name in tasks if not any(fnmatch.fnmatch(name, p) for p in patterns)]
    assert unrouted == [], "name each in BULK_TASKS or INTERACTIVE_TASKS (rungwise/settings.py)"
    assert {queue_of(name) for name in tasks} == {"interactive", "bulk"}


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("annotation.tasks.resolve_item_stage", "interactive"),
        ("annotation.tasks.sweep_unresolved", "interactive"),
        ("agreement.tasks.refresh_agreement", "interactive"),
        ("ratings.tasks.refresh_analysis", "interactive"),
        ("imports.tasks.run_import", "bulk"),
        ("releases.tasks.build_release", "bulk"),
        ("llm.tasks.rater_run", "bulk"),
        ("llm.evaluation.tasks.run_evaluation", "bulk"),
        ("crowd.tasks.pay_bonus", "bulk"),
        ("webhooks.tasks.deliver", "bulk"),
        ("a.task.nobody.routed", "interactive"),
    ],
)
def test_work_goes_to_the_queue_of_its_kind(task, queue):
    assert queue_of(task) == queue


def test_a_worker_without_queue_options_serves_both():
    assert [queue.name for queue in settings.CELERY_TASK_QUEUES] == ["interactive", "bulk"]


@pytest.mark.postgres
@pytest.mark.celery_worker
@pytest.mark.timeout(900)  # process start-ups on a loaded machine (READY_SECONDS)
def test_a_bulk_task_that_cannot_finish_does_not_delay_a_resolution(transactional_db, postgres):
    """The bulk worker is held inside an import (its batch row locked here); an item completed
    meanwhile is resolved by the interactive worker; the import then finishes."""
    if not os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("needs Redis: run through `make test` (scripts/with-services.sh)")
    app.conf.task_always_eager = False
    app.control.purge()
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 2)
    batch = import_batch_create(
        project=project,
        user=None,
        fileobj=io.BytesIO(b"external_id,text\r\nq1,The bulk row\r\n"),
        filename="late.csv",
    )
    interactive = start_queue_worker("interactive")
    bulk = start_queue_worker("bulk")
    lock = psycopg.connect(_test_database_url())
    try:
        table = ImportBatch._meta.db_table
        lock.execute(f'SELECT id FROM "{table}" WHERE id = %s FOR UPDATE', [batch.pk])
        run_import.delay(batch.pk)
        waiting = (
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            f"AND query LIKE '%%{table}%%' AND pid <> pg_backend_pid()"
        )
        with psycopg.connect(_test_database_url(), autocommit=True) as watcher:
            # The bulk worker is inside run_import, waiting for the row.
            wait_for(lambda: watcher.execute(waiting).fetchone()[0] == 1, timeout=300)
            person = make_member(project, Role.ANNOTATOR)
            assignment = services.assignment_next(annotator=person, stage=stage)
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": "keep"}
            )
            item_stage = ItemStage.objects.get(pk=assignment.item_stage_id)
            wait_for(
                lambda: ItemStage.objects.filter(
                    pk=item_stage.pk, state=ItemStage.State.RESOLVED
                ).exists(),
                timeout=300,
            )
            # Resolved while the bulk worker is still held.
            assert watcher.execute(waiting).fetchone()[0] == 1
            batch.refresh_from_db()
            assert batch.status == ImportBatch.Status.PENDING
        lock.rollback()
        wait_for(
            lambda: ImportBatch.objects.get(pk=batch.pk).status == ImportBatch.Status.SUCCEEDED,
            timeout=300,
        )
    finally:
        lock.close()
        stop_worker(interactive)
        stop_worker(bulk)
