"""API tokens expire, and a changed password ends them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.factories import PASSWORD, make_member, make_project

pytestmark = pytest.mark.django_db


def token_of(username: str) -> str:
    response = APIClient().post(
        "/api/auth/token/", {"username": username, "password": PASSWORD}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def projects(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/projects/").status_code


def test_a_token_expires_and_a_new_one_is_issued(settings):
    person = make_member(make_project())
    key = token_of(person.username)
    assert projects(key) == 200
    Token.objects.filter(key=key).update(
        created=timezone.now() - timedelta(seconds=settings.API_TOKEN_MAX_AGE_SECONDS + 1)
    )
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    expired = client.get("/api/projects/")
    assert expired.status_code == 403 and "expired" in expired.json()["message"]
    fresh = token_of(person.username)
    assert fresh != key and projects(fresh) == 200
    assert not Token.objects.filter(key=key).exists()


def test_a_live_token_is_returned_again_not_replaced():
    person = make_member(make_project())
    assert token_of(person.username) == token_of(person.username)


def test_changing_the_password_ends_the_users_tokens():
    person = make_member(make_project())
    other = make_member(make_project())
    key, others = token_of(person.username), token_of(other.username)
    person.last_name = "unchanged password"
    person.save()
    assert projects(key) == 200  # other changes keep the token
    person.set_password("a-new-long-password-42")
    person.save()
    assert projects(key) == 403  # DRF answers 403 when session auth comes first
    assert projects(others) == 200
