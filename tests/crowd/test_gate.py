"""crowd/gate.py: one gate for every path. A participant gets work only through their study's
stages, whenever and however another stage was added; the REST API goes through the same gate
as the pages, inside the write's transaction (screen-out, completion, time limit)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Assignment, Stage
from crowd.models import Participant
from tests.crowd.test_services import enter, ready
from tests.factories import make_crowd_study, prolific_ids

pytestmark = pytest.mark.django_db

COMPLETE = "https://app.prolific.com/submissions/complete"


def add_gold_stage(project, **extra) -> Stage:
    """A stage added after the study, holding the project's items (gold included)."""
    stage = engine.stage_create(
        project=project, slug="gold-review", name="Gold review", kind="verify", overlap=3, **extra
    )
    engine.item_stages_open(items=list(project.items.all()), stage=stage)
    return stage


def test_a_stage_added_after_the_study_gives_its_participants_nothing():
    study = make_crowd_study(practice=0, checks=1)
    participant = ready(enter(study, 1))
    later = add_gold_stage(study.project)
    # a stage written by other means (the Django admin saves the row itself) is closed too
    raw = Stage.objects.create(
        project=study.project, slug="raw", name="Raw", kind="verify", position=9, overlap=3
    )
    engine.item_stages_open(items=list(study.project.items.all()), stage=raw)
    for stage in (later, raw):
        access = access_stage_for_annotator(user=participant.user, stage_id=stage.pk)
        assert engine.assignment_next(annotator=participant.user, stage=access) is None
        # and a stage object that did not come from the access function: the same
        assert engine.assignment_next(annotator=participant.user, stage=stage) is None
    assert not Assignment.objects.filter(stage__in=(later, raw)).exists()
    # the study's own stage still works, and other annotators still get the new stage's items
    study_stage = access_stage_for_annotator(user=participant.user, stage_id=study.stage_id)
    assert engine.assignment_next(annotator=participant.user, stage=study_stage) is not None
    from tests.factories import make_member

    member = make_member(study.project)
    access = access_stage_for_annotator(user=member, stage_id=later.pk)
    assert engine.assignment_next(annotator=member, stage=access) is not None


def test_a_stage_added_later_through_the_api_is_closed_to_participants_there_too(client):
    study = make_crowd_study(practice=0, checks=1)
    later = add_gold_stage(study.project)
    signed_in(client, study, 1)
    response = client.post(reverse("api:next", args=[later.pk]))
    assert response.status_code == 204
    assert not Assignment.objects.filter(stage=later).exists()


def signed_in(client, study, number: int) -> Participant:
    """A participant through the study URL, the consent and the instructions (a session)."""
    query = urlencode(prolific_ids(number))
    client.get(reverse("crowd:enter", args=[study.token]) + "?" + query)
    client.post(reverse("crowd:consent", args=[study.token]), {"decision": "accept", "agree": "1"})
    client.post(reverse("crowd:instructions", args=[study.token]))
    return Participant.objects.get(study=study, platform_id=prolific_ids(number)["PROLIFIC_PID"])


def api_next(client, stage_id: int):
    return client.post(reverse("api:next", args=[stage_id]), content_type="application/json")


def api_submit(client, assignment_id: int, value: str):
    return client.post(
        reverse("api:submit", args=[assignment_id]),
        {"payload": {"value": value}},
        content_type="application/json",
    )


def api_revise(client, annotation_id: int, value: str):
    return client.post(
        reverse("api:revise", args=[annotation_id]),
        {"payload": {"value": value}},
        content_type="application/json",
    )


def test_a_failed_check_through_the_api_screens_out_at_once_and_cannot_be_revised(client):
    study = make_crowd_study(regular=1, practice=0, checks=1, quota=2, max_check_failures=0)
    participant = signed_in(client, study, 1)
    answered = []
    while True:
        response = api_next(client, study.stage_id)
        if response.status_code != 200:
            break
        response = api_submit(client, response.json()["id"], "temporal")  # the check's gold: causal
        assert response.status_code == 201
        answered.append(response.json()["id"])
        participant.refresh_from_db()
        if participant.status != "active":
            break
    assert participant.status == "screened_out"
    check = Annotation.objects.get(
        annotator=participant.user, item_stage__item__purpose="attention_check"
    )
    response = api_revise(client, check.pk, "causal")
    assert response.status_code == 403
    assert Annotation.objects.get(assignment_id=check.assignment_id).payload["value"] == "temporal"
    # the pages agree: the screen-out code, never the completion code
    response = client.get(reverse("crowd:done", args=[study.token]))
    from tests.crowd.test_views import returned_to

    assert returned_to(response) == f"{COMPLETE}?cc=SCREEN0UT"


def test_a_participant_completed_through_the_api_can_no_longer_change_answers(client):
    study = make_crowd_study(regular=4, practice=0, checks=0, quota=2)
    participant = signed_in(client, study, 1)
    for _ in range(2):
        response = api_next(client, study.stage_id)
        assert response.status_code == 200
        response = api_submit(client, response.json()["id"], "causal")
        assert response.status_code == 201
    participant.refresh_from_db()
    assert participant.status == "completed"  # in the submit's own transaction
    first = Annotation.objects.filter(annotator=participant.user).order_by("pk").first()
    assert api_revise(client, first.pk, "temporal").status_code == 403
    assert api_next(client, study.stage_id).status_code == 204
    assert Annotation.all_versions.filter(annotator=participant.user).count() == 2


def test_the_time_limit_holds_on_api_next_and_submit_before_any_sweep(client):
    study = make_crowd_study(regular=4, practice=0, checks=0, quota=3, time_limit_minutes=5)
    participant = signed_in(client, study, 1)
    response = api_next(client, study.stage_id)
    assert response.status_code == 200
    assignment_id = response.json()["id"]
    Participant.objects.filter(pk=participant.pk).update(
        started_at=timezone.now() - timedelta(minutes=6)
    )
    response = api_submit(client, assignment_id, "causal")
    assert response.status_code == 403 and "ended" in response.json()["message"]
    assert not Annotation.objects.exists()
    assert api_next(client, study.stage_id).status_code == 204
    participant.refresh_from_db()
    assert participant.status == "timed_out"  # the next item's transaction recorded it
    assert Assignment.objects.filter(annotator=participant.user).count() == 1


def test_a_submit_with_next_hands_out_nothing_once_the_quota_is_met(client):
    study = make_crowd_study(regular=4, practice=0, checks=0, quota=1)
    signed_in(client, study, 1)
    response = api_next(client, study.stage_id)
    response = client.post(
        reverse("api:submit", args=[response.json()["id"]]),
        {"payload": {"value": "causal"}, "next": True},
        content_type="application/json",
    )
    assert response.status_code == 201 and response.json()["next"] is None
    assert Participant.objects.get().status == "completed"
