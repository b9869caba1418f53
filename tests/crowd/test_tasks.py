"""The crowd beat tasks on a real Celery worker (PostgreSQL + Redis): an abandoned session is
timed out and its lease released by the worker."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.models import Assignment, ItemStage
from crowd import tasks
from crowd.models import Participant
from tests.conftest import wait_for
from tests.crowd.test_services import enter, next_item, ready
from tests.factories import make_crowd_study

pytestmark = [pytest.mark.celery_worker]


def test_the_worker_times_out_an_abandoned_session_and_frees_its_slot(celery_worker):
    study = make_crowd_study(practice=0, checks=0, time_limit_minutes=10)
    participant = ready(enter(study, 1))
    assignment = next_item(participant)
    Participant.objects.filter(pk=participant.pk).update(
        started_at=timezone.now() - timedelta(minutes=11)
    )
    tasks.time_out_participants.delay()
    wait_for(
        lambda: Participant.objects.get(pk=participant.pk).status == Participant.Status.TIMED_OUT
    )
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.REVOKED
    assert ItemStage.objects.get(pk=assignment.item_stage_id).leased_count == 0
    assert celery_worker.poll() is None
