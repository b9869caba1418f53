"""Tasks without a broker run off the request (rungwise/inprocess.py, rungwise/celery.py): a
task sent while a request is served waits for the background thread; one sent elsewhere runs at
once; a failing task is logged and the thread goes on. Each test holds the thread with a job
that waits for an event, so what "not yet" means does not depend on timing."""

from __future__ import annotations

import threading

import pytest
from django.core.signals import request_finished, request_started
from django.urls import reverse

from annotation.models import Assignment, ItemStage, Role
from ratings import services as ratings_services
from ratings.models import RatingsSetup
from rungwise.celery import app
from tests.factories import make_member
from tests.ratings.conftest import make_ratings_project, pairs_csv

#: Django closes stale connections when a request starts: the signals below need the database.
pytestmark = pytest.mark.django_db

RAN: list[str] = []


@app.task(name="tests.test_inprocess.record")
def record(word: str) -> None:
    RAN.append(word)


@app.task(name="tests.test_inprocess.explode")
def explode() -> None:
    raise RuntimeError("this task fails on purpose")


@pytest.fixture
def held(background_tasks):
    """The background thread, busy until the test sets the returned event."""
    release = threading.Event()
    background_tasks.submit(lambda: release.wait(30))
    RAN.clear()
    yield release
    release.set()


def serving_a_request():
    request_started.send(sender=None)


def done_serving():
    request_finished.send(sender=None)


def test_a_task_sent_during_a_request_runs_after_it_in_the_background(held, background_tasks):
    serving_a_request()
    try:
        record.delay("during")
    finally:
        done_serving()
    assert RAN == []  # not inside the request: the thread is still busy with the earlier job
    held.set()
    assert background_tasks.drain(timeout=30)
    assert RAN == ["during"]


def test_a_task_sent_outside_a_request_runs_at_once(held):
    record.delay("now")  # a management command, the shell
    assert RAN == ["now"]


def test_tasks_run_in_the_order_they_were_sent_and_a_failure_stops_none(
    held, background_tasks, caplog
):
    serving_a_request()
    try:
        record.delay("first")
        explode.delay()
        record.delay("second")
    finally:
        done_serving()
    held.set()
    assert background_tasks.drain(timeout=30)
    assert RAN == ["first", "second"]
    assert "an in-process background task failed" in caplog.text


def test_inline_mode_runs_tasks_inside_the_request():
    RAN.clear()
    serving_a_request()
    try:
        record.delay("inline")  # tests' default (tests/conftest.py)
    finally:
        done_serving()
    assert RAN == ["inline"]


@pytest.mark.django_db(transaction=True)
def test_a_ratings_submit_answers_before_the_item_is_resolved(client, held, background_tasks):
    project = make_ratings_project(overlap=1)
    pairs = [("k1", "The storm hit.", "The power went out.", "causal", "", "")]
    ratings_services.pairs_import(project=project, content=pairs_csv(pairs), filename="pairs.csv")
    stage_id = RatingsSetup.objects.get(project=project).rating_stage_id
    rater = make_member(project, Role.ANNOTATOR, username="quick")
    client.force_login(rater)
    client.post(reverse("annotation:stage", args=[stage_id]), HTTP_HX_REQUEST="true")
    lease = Assignment.objects.get(annotator=rater, status=Assignment.Status.ACTIVE)

    response = client.post(
        reverse("annotation:submit", args=[lease.pk]), {"value": "7"}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    # The answer completed the item (overlap 1), but its resolution waits for the thread.
    assert ItemStage.objects.get(pk=lease.item_stage_id).state == ItemStage.State.RESOLVING
    held.set()
    assert background_tasks.drain(timeout=60)
    assert ItemStage.objects.get(pk=lease.item_stage_id).state == ItemStage.State.RESOLVED
