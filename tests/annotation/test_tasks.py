"""A real Celery worker on Redis resolves items after commit; the sweep repairs lost messages."""

from __future__ import annotations

import pytest

from annotation import services, tasks
from annotation.access import access_stage_for_annotator
from annotation.models import ItemStage, Resolution
from tests.conftest import wait_for
from tests.factories import pipeline

pytestmark = [pytest.mark.celery_worker]


def annotate_all(stage, people, value="keep"):
    for person in people:
        access = access_stage_for_annotator(user=person, stage_id=stage.pk)
        while (assignment := services.assignment_next(annotator=person, stage=access)) is not None:
            services.annotation_submit(
                assignment_id=assignment.pk, annotator=person, payload={"value": value}
            )


def test_the_worker_resolves_items_after_commit_and_advances_them(celery_worker):
    project, verify, label, people = pipeline(overlap=3, items=5)
    annotate_all(verify, people)
    wait_for(lambda: Resolution.objects.filter(item_stage__stage=verify).count() == 5)
    assert set(ItemStage.objects.filter(stage=verify).values_list("state", flat=True)) == {
        "resolved"
    }
    # the worker opened every kept item in the label stage
    wait_for(lambda: ItemStage.objects.filter(stage=label).count() == 5)
    assert celery_worker.poll() is None


def test_the_sweep_resolves_items_whose_message_was_lost(celery_worker, monkeypatch):
    project, verify, _, people = pipeline(overlap=3, items=4)

    # Lose every resolve message: publishing fails as if Redis were unreachable.
    def lost(*args, **kwargs):
        raise ConnectionError("broker unreachable (simulated)")

    monkeypatch.setattr(tasks.resolve_item_stage, "delay", lost)
    annotate_all(verify, people)
    assert ItemStage.objects.filter(stage=verify, state="resolving").count() == 4
    assert not Resolution.objects.exists()
    monkeypatch.undo()
    # The beat entry, sent to the real worker.
    tasks.sweep_unresolved.delay(0)
    wait_for(lambda: Resolution.objects.filter(item_stage__stage=verify).count() == 4)
    assert not ItemStage.objects.filter(stage=verify, state="resolving").exists()
