"""Invite links under concurrency (studio.services.invite_sign_up / invite_accept): a link's use
limit holds when sign-ups race, and a refused sign-up leaves no account behind. Real PostgreSQL
(row locks), so `make test` runs them; plain pytest on SQLite skips them."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation.errors import Conflict
from annotation.models import Membership
from studio import services
from studio.models import Invite
from tests.factories import make_project, make_user

SIGN_UPS = 8


def _race(count, action):
    """Run ``action(index)`` in ``count`` threads released together; return their results
    (an exception where one raised)."""
    barrier = threading.Barrier(count)
    results: list[object] = [None] * count

    def run(index):
        try:
            barrier.wait()
            results[index] = action(index)
        except BaseException as error:  # surfaced by the caller's assertions
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_sign_ups_on_a_one_use_link_create_one_account(postgres):
    project = make_project()
    invite = services.invite_create(
        project=project, role="annotator", days=1, max_uses=1, created_by=make_user("inviter")
    )
    url = reverse("studio:join", args=[invite.token])
    password = "a-long-pass-9!"

    def sign_up(index):
        response = Client().post(
            url, {"username": f"racer{index}", "password1": password, "password2": password}
        )
        return response.status_code

    statuses = _race(SIGN_UPS, sign_up)
    assert sorted(statuses) == [302] + [409] * (SIGN_UPS - 1)
    accounts = get_user_model().objects.filter(username__startswith="racer")
    assert accounts.count() == 1
    assert list(Membership.objects.filter(project=project).values_list("user", flat=True)) == [
        accounts.get().pk
    ]
    invite.refresh_from_db()
    assert invite.uses == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_racing_signed_in_people_on_a_two_use_link_make_two_members(postgres):
    project = make_project()
    invite = services.invite_create(
        project=project, role="annotator", days=1, max_uses=2, created_by=make_user("inviter")
    )
    people = [make_user(f"member{index}") for index in range(SIGN_UPS)]
    results = _race(
        SIGN_UPS, lambda index: services.invite_accept(token=invite.token, user=people[index])
    )
    assert sum(isinstance(result, Membership) for result in results) == 2
    assert all(isinstance(result, Membership | Conflict) for result in results)
    assert Membership.objects.filter(project=project).count() == 2
    invite.refresh_from_db()
    assert invite.uses == 2


@pytest.mark.django_db
def test_a_used_up_link_refuses_a_sign_up_and_creates_no_account():
    project = make_project()
    invite = services.invite_create(
        project=project, role="annotator", days=1, max_uses=1, created_by=make_user("inviter")
    )
    services.invite_sign_up(token=invite.token, username="first", password="a-long-pass-9!")
    with pytest.raises(Conflict, match="used up"):
        services.invite_sign_up(token=invite.token, username="second", password="a-long-pass-9!")
    assert not get_user_model().objects.filter(username="second").exists()
    with pytest.raises(Conflict, match="'first' was taken"):
        Invite.objects.filter(pk=invite.pk).update(max_uses=0)
        services.invite_sign_up(token=invite.token, username="first", password="a-long-pass-9!")
    invite.refresh_from_db()
    assert invite.uses == 1 and Membership.objects.filter(project=project).count() == 1
