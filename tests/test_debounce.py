"""The debounce of background work (rungwise/debounce.py): a burst of requests sends one
message, after commit; the task's consume lets the next change send again; a failed publish is
logged, not raised, and clears the mark; an overdue mark is taken over; tasks are found by name.
The state rows here are agreement.AgreementRefresh rows, the helper's first user."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from celery import shared_task
from django.utils import timezone
from kombu.exceptions import OperationalError

from agreement.models import AgreementRefresh
from rungwise.debounce import (
    debounce_consume,
    debounce_request,
    enqueue_on_commit,
    task_named,
    unqueued_or_overdue,
)
from tests.factories import make_label_stage, make_project
from tests.processes import REPO

pytestmark = pytest.mark.django_db

RECORD = "tests.test_debounce.record"
received: list[tuple] = []


@shared_task(name=RECORD)
def record(*args) -> None:
    """Runs in-process (the tests' eager default) and notes its arguments."""
    received.append(args)


@pytest.fixture
def row():
    received.clear()
    stage = make_label_stage(make_project())
    AgreementRefresh.objects.create(stage=stage)
    yield AgreementRefresh.objects.filter(pk=stage.pk)
    received.clear()


def queued_at(row):
    return row.values_list("queued_at", flat=True).get()


def test_a_burst_of_requests_sends_one_message_after_commit(
    row, django_capture_on_commit_callbacks
):
    countdowns = []

    def countdown() -> float:
        countdowns.append(1)
        return 5.0

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        sent = [
            debounce_request(row, task_name=RECORD, args=(7, "x"), countdown=countdown)
            for _ in range(20)
        ]
        assert received == []  # nothing leaves before the commit
    assert sent == [True] + [False] * 19
    assert len(callbacks) == 1 and countdowns == [1]  # the countdown is read by the sender only
    assert received == [(7, "x")]
    assert queued_at(row) is not None

    # The task consumes the mark: the next change sends again.
    debounce_consume(row)
    assert queued_at(row) is None
    with django_capture_on_commit_callbacks(execute=True):
        assert debounce_request(row, task_name=RECORD, args=(8,)) is True
    assert received == [(7, "x"), (8,)]


def test_force_sends_even_while_a_message_is_on_its_way(row, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert debounce_request(row, task_name=RECORD, args=(1,))
        assert not debounce_request(row, task_name=RECORD, args=(2,))
        assert debounce_request(row, task_name=RECORD, args=(3,), force=True)
    assert received == [(1,), (3,)]


def test_a_missing_row_sends_nothing(row, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        assert debounce_request(row.none(), task_name=RECORD, args=(1,)) is False
        assert debounce_request(row.filter(pk=-1), task_name=RECORD, args=(1,)) is False
    assert received == []


def test_an_overdue_mark_is_taken_over_and_found_by_the_sweep_condition(
    row, django_capture_on_commit_callbacks
):
    row.update(queued_at=timezone.now() - timedelta(seconds=30))
    assert not row.filter(unqueued_or_overdue(60)).exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert not debounce_request(row, task_name=RECORD, args=(1,), overdue_after=60)
    row.update(queued_at=timezone.now() - timedelta(seconds=90))
    assert row.filter(unqueued_or_overdue(60)).exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert not debounce_request(row, task_name=RECORD, args=(1,))  # no takeover asked
        assert debounce_request(row, task_name=RECORD, args=(2,), overdue_after=60)
    assert received == [(2,)]
    assert not row.filter(unqueued_or_overdue(60)).exists()
    row.update(queued_at=None)
    assert row.filter(unqueued_or_overdue(60)).exists()


@pytest.mark.parametrize(
    ("error", "level"),
    [(OperationalError("redis is down"), "WARNING"), (RuntimeError("eager task"), "ERROR")],
)
def test_a_failed_publish_is_logged_and_clears_the_mark(
    row, monkeypatch, django_capture_on_commit_callbacks, caplog, error, level
):
    def refuse(*args, **kwargs):
        raise error

    monkeypatch.setattr(task_named(RECORD), "apply_async", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        assert debounce_request(row, task_name=RECORD, args=(1,), what="the test refresh")
    assert queued_at(row) is None  # the next request tries again
    [message] = [entry for entry in caplog.records if "could not enqueue" in entry.message]
    assert message.levelname == level
    assert "could not enqueue the test refresh" in message.getMessage()


def test_a_failed_publish_keeps_a_mark_set_after_it(row, monkeypatch, caplog):
    """The failure clears only the mark its own request set, not a newer one."""

    def refuse(*args, **kwargs):
        row.update(queued_at=timezone.now() + timedelta(seconds=1))  # a newer request's mark
        raise OperationalError("redis is down")

    monkeypatch.setattr(task_named(RECORD), "apply_async", refuse)
    assert debounce_request(row, task_name=RECORD, args=(1,))  # outside a transaction: at once
    assert queued_at(row) is not None


def test_enqueue_on_commit_passes_the_countdown_and_sends_nothing_on_rollback(
    row, monkeypatch, django_capture_on_commit_callbacks
):
    calls = []
    monkeypatch.setattr(
        task_named(RECORD), "apply_async", lambda args, **options: calls.append((args, options))
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        enqueue_on_commit(RECORD, (1,), countdown=2.5)
    assert calls == [] and len(callbacks) == 1  # dropped if the transaction rolls back
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit(RECORD, (1,), countdown=2.5)
        enqueue_on_commit(RECORD, [2])
    assert calls == [((1,), {"countdown": 2.5}), ((2,), {})]


def test_an_unknown_task_name_is_a_key_error_and_logged_when_sent(
    django_capture_on_commit_callbacks, caplog
):
    with pytest.raises(KeyError):
        task_named("agreement.tasks.no_such_task")
    with pytest.raises(KeyError):
        task_named("no_such_app.tasks.refresh")
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_on_commit("agreement.tasks.no_such_task", (1,))  # must not raise
    assert "could not enqueue agreement.tasks.no_such_task(1,)" in caplog.text


def test_a_task_is_found_by_name_before_its_module_was_imported():
    """A fresh process that has not imported a tasks module finds its tasks by name (tasks are
    named after their module)."""
    script = (
        "import sys, django; django.setup()\n"
        "assert 'crowd.tasks' not in sys.modules\n"
        "from rungwise.debounce import task_named\n"
        "task = task_named('crowd.tasks.pay_bonus')\n"
        "assert 'crowd.tasks' in sys.modules and task.name == 'crowd.tasks.pay_bonus'\n"
        "print('found')\n"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL")
    }
    env["DJANGO_SETTINGS_MODULE"] = "rungwise.settings"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0 and "found" in result.stdout, result.stderr[-2000:]
