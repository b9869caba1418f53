"""Resolution messages batched (annotation/services/resolution_publish.py): every completed item
stage's id is sent exactly once, full batches at once and the rest after the window; a batch
goes out only after the submit commits; the real worker resolves every item of a batch; and a
batch the broker refused is resolved by the sweep."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction
from kombu.exceptions import OperationalError as BrokerUnavailable

from annotation import tasks
from annotation.access import access_stage_for_annotator
from annotation.models import ItemStage, Resolution
from annotation.services import resolution_publish
from annotation.services.resolution_publish import ResolutionBuffer
from tests.conftest import wait_for
from tests.factories import pipeline


class Recorder:
    """A send that records its batches (optionally failing the first few)."""

    def __init__(self, failures: int = 0) -> None:
        self.batches: list[list[int]] = []
        self.failures = failures
        self.lock = threading.Lock()

    def __call__(self, batch: list[int]) -> None:
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise RuntimeError("broker refused (simulated)")
            self.batches.append(list(batch))

    def sent(self) -> list[int]:
        with self.lock:
            return [pk for batch in self.batches for pk in batch]


def test_a_full_batch_is_sent_by_the_caller_that_filled_it():
    record = Recorder()
    buffer = ResolutionBuffer(record, window=3600, size=3)
    buffer.add(1)
    buffer.add(2)
    assert record.batches == [] and buffer.pending() == [1, 2]
    buffer.add(3)
    assert record.batches == [[1, 2, 3]] and buffer.pending() == []


def test_what_waits_is_sent_when_the_window_ends():
    record = Recorder()
    buffer = ResolutionBuffer(record, window=0.01, size=100)
    buffer.add(7)
    buffer.add(8)
    wait_for(lambda: record.sent() == [7, 8])
    assert buffer.pending() == []


def test_every_id_added_from_many_threads_is_sent_exactly_once():
    record = Recorder()
    buffer = ResolutionBuffer(record, window=0.005, size=7)

    def add(start: int) -> None:
        for pk in range(start, start + 250):
            buffer.add(pk)

    threads = [threading.Thread(target=add, args=(index * 1000,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wait_for(lambda: len(record.sent()) >= 2000)
    expected = [index * 1000 + offset for index in range(8) for offset in range(250)]
    assert sorted(record.sent()) == expected
    assert all(len(batch) <= 7 for batch in record.batches)


def test_a_failed_send_does_not_stop_later_batches():
    record = Recorder(failures=1)
    buffer = ResolutionBuffer(record, window=0.01, size=100)
    buffer.add(1)
    wait_for(lambda: record.failures == 0)  # the first batch failed (the sweep has it)
    buffer.add(2)
    wait_for(lambda: record.sent() == [2])


def annotate_all(stage, people):
    from annotation import services

    for person in people:
        reached = access_stage_for_annotator(user=person, stage_id=stage.pk)
        while (lease := services.assignment_next(annotator=person, stage=reached)) is not None:
            services.annotation_submit(
                assignment_id=lease.pk, annotator=person, payload={"value": "keep"}
            )


@pytest.fixture
def batching(settings, monkeypatch):
    """Batching on, tasks sent to a broker (not run in-process), a fresh buffer that records
    its batches instead of sending them."""
    from rungwise.celery import app

    settings.RESOLVE_PUBLISH_WINDOW_SECONDS = 3600
    # As with a broker, also under `make test-fast` (no broker: the setting says eager).
    settings.CELERY_TASK_ALWAYS_EAGER = False
    app.conf.task_always_eager = False  # restored by tests/conftest.py's _celery_eager_by_default
    record = Recorder()
    monkeypatch.setattr(
        resolution_publish, "_buffer", ResolutionBuffer(record, window=3600, size=1000)
    )
    return record


@pytest.mark.django_db(transaction=True)
def test_completed_item_stages_enter_the_batch_only_when_the_submit_commits(batching):
    _, verify, _, people = pipeline(overlap=3, items=2)
    buffer = resolution_publish.resolution_buffer()
    with transaction.atomic():
        annotate_all(verify, people)
        assert buffer.pending() == []  # not before the commit
    completed = sorted(ItemStage.objects.filter(stage=verify).values_list("pk", flat=True))
    assert sorted(buffer.pending()) == completed and len(completed) == 2

    _, other, _, others = pipeline(overlap=3, items=2)
    with pytest.raises(RuntimeError), transaction.atomic():
        annotate_all(other, others)
        raise RuntimeError("rolled back")
    assert sorted(buffer.pending()) == completed  # a rolled-back submit queued nothing


@pytest.mark.celery_worker
@pytest.mark.postgres
def test_the_worker_resolves_every_item_of_the_batched_messages(
    celery_worker, settings, monkeypatch
):
    settings.RESOLVE_PUBLISH_WINDOW_SECONDS = 0.05
    monkeypatch.setattr(resolution_publish, "_buffer", None)
    singles, batches = [], []
    monkeypatch.setattr(tasks.resolve_item_stage, "delay", lambda *args: singles.append(args))
    send = tasks.resolve_item_stages.delay
    monkeypatch.setattr(
        tasks.resolve_item_stages, "delay", lambda ids: (batches.append(ids), send(ids))[1]
    )
    _, verify, label, people = pipeline(overlap=3, items=5)
    annotate_all(verify, people)
    wait_for(lambda: Resolution.objects.filter(item_stage__stage=verify).count() == 5)
    assert set(ItemStage.objects.filter(stage=verify).values_list("state", flat=True)) == {
        "resolved"
    }
    wait_for(lambda: ItemStage.objects.filter(stage=label).count() == 5)  # the pipeline moved on
    assert singles == [] and sorted(pk for batch in batches for pk in batch) == sorted(
        ItemStage.objects.filter(stage=verify).values_list("pk", flat=True)
    )


@pytest.mark.celery_worker
@pytest.mark.postgres
def test_a_batch_the_broker_refused_is_resolved_by_the_sweep(celery_worker, settings, monkeypatch):
    settings.RESOLVE_PUBLISH_WINDOW_SECONDS = 3600  # sent when flushed below, not by the timer
    monkeypatch.setattr(resolution_publish, "_buffer", None)

    def refused(*args, **kwargs):
        raise BrokerUnavailable("broker unreachable (simulated)")

    monkeypatch.setattr(tasks.resolve_item_stages, "delay", refused)
    _, verify, _, people = pipeline(overlap=3, items=4)
    annotate_all(verify, people)
    resolution_publish.resolution_buffer().flush()  # refused: logged, not raised
    assert ItemStage.objects.filter(stage=verify, state="resolving").count() == 4
    assert not Resolution.objects.exists()
    monkeypatch.undo()
    tasks.sweep_unresolved.delay(0)  # the beat entry, sent to the real worker
    wait_for(lambda: Resolution.objects.filter(item_stage__stage=verify).count() == 4)
    assert not ItemStage.objects.filter(stage=verify, state="resolving").exists()
