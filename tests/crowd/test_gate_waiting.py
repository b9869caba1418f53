"""A participant whose next practice item is held (row-locked) by another participant's
transaction at that moment is told to wait and try again, never shown the end-of-stage "All
done" screen (a false completion); once the lock goes, the same button hands the item out.
Real PostgreSQL: the lock is held by another connection (SKIP LOCKED skips the row)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.urls import reverse

from annotation.models import Assignment, Item, ItemStage
from crowd.gate import SESSION_KEY
from tests.crowd.test_services import enter, ready

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class RowLock:
    """Holds ``SELECT … FOR UPDATE`` on one item stage in another connection until released."""

    def __init__(self, item_stage_id: int):
        self.item_stage_id = item_stage_id
        self.locked = threading.Event()
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self):
        try:
            with transaction.atomic():
                ItemStage.objects.select_for_update().get(pk=self.item_stage_id)
                self.locked.set()
                self.release.wait(30)
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        assert self.locked.wait(10)
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.thread.join(10)


def signed_in(client, participant):
    client.force_login(participant.user)
    session = client.session
    session[SESSION_KEY] = participant.pk
    session.save()


@pytest.mark.parametrize("htmx", [True, False])
def test_a_locked_practice_item_means_wait_not_all_done(client, postgres, htmx):
    from tests.factories import make_crowd_study

    study = make_crowd_study(regular=4, practice=1, checks=0, quota=2)
    participant = ready(enter(study, 1))
    signed_in(client, participant)
    practice = ItemStage.objects.get(stage=study.stage, item__purpose=Item.Purpose.PRACTICE)
    stage_url = reverse("annotation:stage", args=[study.stage_id])
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    with RowLock(practice.pk):
        response = client.post(stage_url, **headers, follow=not htmx)
        page = response.content.decode()
        assert response.status_code == 200
        assert "All done" not in page
        if htmx:  # the screen after the POST: wait
            assert "data-waiting" in page and "Try again" in page
            assert "at this very moment" in page
        else:  # redirected to GET, which never leases: the start button
            assert "Ready when you are" in page
    response = client.post(stage_url, **headers, follow=not htmx)
    page = response.content.decode()
    # the practice item, now free: leased to them and shown (marked, without its id: a
    # participant sees no item ids)
    assert "All done" not in page and "Practice item" in page and "p-000" not in page
    leased = Assignment.objects.get(annotator=participant.user, status=Assignment.Status.ACTIVE)
    assert leased.item_stage_id == practice.pk


def test_a_participant_whose_remaining_items_are_all_taken_is_told_to_try_later(client, postgres):
    from tests.factories import make_crowd_study

    study = make_crowd_study(regular=1, practice=0, checks=0, quota=3, overlap=1)
    participant = ready(enter(study, 1))
    other = ready(enter(study, 2))
    signed_in(client, participant)
    stage_url = reverse("annotation:stage", args=[study.stage_id])
    # the only item goes to someone else: the stage has nothing for this participant
    from tests.crowd.test_services import answer, next_item

    answer(other, next_item(other))
    response = client.post(stage_url, HTTP_HX_REQUEST="true")
    page = response.content.decode()
    # their quota is not met: not "All done" (they have no code), but to try again later
    assert "All done" not in page and "data-waiting" in page
    assert "message the researcher" in page


def test_other_annotators_still_see_all_done(client, postgres):
    from annotation.models import Role
    from tests.factories import make_crowd_study, make_member

    study = make_crowd_study(regular=0, practice=0, checks=0)
    member = make_member(study.project, Role.ANNOTATOR)
    study.stage.eligibility = []
    study.stage.save(update_fields=["eligibility"])
    client.force_login(member)
    response = client.post(
        reverse("annotation:stage", args=[study.stage_id]), HTTP_HX_REQUEST="true"
    )
    assert "All done" in response.content.decode()
