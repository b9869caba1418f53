"""The API token page (api/pages.py): named tokens made, listed, used by the API and revoked;
the old ``/api/auth/token/`` clients keep working beside them."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import KEY_PREFIX, PersonalToken
from tests.factories import PASSWORD, make_member, make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def person(client):
    user = make_member(make_project(slug="mine"))
    client.force_login(user)
    return user


def create(client, name="nightly export", days="30"):
    response = client.post(reverse("tokens:tokens"), {"name": name, "days": days})
    found = re.search(r'id="token-key"[^>]*value="([^"]+)"', response.content.decode())
    return response, found.group(1) if found else None


def api_get(key, path="/api/projects/"):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get(path)


def test_a_named_token_is_made_shown_once_used_and_revoked(client, person):
    response, key = create(client)
    assert response.status_code == 201 and key and key.startswith(KEY_PREFIX)
    token = PersonalToken.objects.get(user=person)
    assert token.name == "nightly export" and key not in {token.key_hash, token.key_start}
    assert 29 <= (token.expires_at - timezone.now()).days <= 30
    listed = client.get(reverse("tokens:tokens")).content.decode()
    assert "nightly export" in listed and key not in listed and "never" in listed
    used = api_get(key)
    assert used.status_code == 200 and [p["slug"] for p in used.json()["results"]] == ["mine"]
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert "never" not in client.get(reverse("tokens:tokens")).content.decode()
    revoked = client.post(reverse("tokens:revoke"), {"token": token.pk})
    assert revoked.status_code == 302 and not PersonalToken.objects.exists()
    assert api_get(key).status_code == 403


def test_expired_and_unknown_named_tokens_are_refused_saying_why(client, person):
    _, key = create(client, days="1")
    PersonalToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = api_get(key)
    assert expired.status_code == 403 and "has expired" in expired.json()["message"]
    assert "expired" in client.get(reverse("tokens:tokens")).content.decode()
    assert api_get(KEY_PREFIX + "made-up").status_code == 403


@pytest.mark.parametrize(
    "name, days, words",
    [
        ("", "30", "Name the token"),
        ("ok", "0", "days must be from 1 to 365"),
        ("ok", "366", "days must be from 1 to 365"),
        ("ok", "many", "days must be a whole number"),
        ("bad\x00name", "30", "control character"),
    ],
)
def test_a_refused_token_says_why_and_makes_nothing(client, person, name, days, words):
    response, key = create(client, name=name, days=days)
    assert response.status_code == 400 and key is None
    assert words.lower() in html.unescape(response.content.decode()).lower()
    assert not PersonalToken.objects.exists()


def test_two_tokens_of_one_person_need_two_names(client, person):
    create(client, name="ci")
    again, key = create(client, name="ci")
    assert again.status_code == 409 and key is None
    assert "already have a token named" in html.unescape(again.content.decode())
    assert PersonalToken.objects.count() == 1


def test_nobody_sees_or_revokes_another_persons_token(client, person):
    _, key = create(client, name="private-script")
    theirs = PersonalToken.objects.get()
    client.force_login(make_user("mallory"))
    assert "private-script" not in client.get(reverse("tokens:tokens")).content.decode()
    refused = client.post(reverse("tokens:revoke"), {"token": theirs.pk})
    assert refused.status_code == 404 and PersonalToken.objects.filter(pk=theirs.pk).exists()
    assert api_get(key).status_code == 200


def test_the_token_page_needs_a_sign_in(client):
    for method, name in (
        ("get", "tokens:tokens"),
        ("post", "tokens:tokens"),
        ("post", "tokens:revoke"),
    ):
        response = getattr(client, method)(reverse(name))
        assert response.status_code == 302 and reverse("login") in response.url
    assert not PersonalToken.objects.exists()


def test_a_changed_password_ends_named_tokens_and_the_old_endpoint_still_works(client, person):
    _, key = create(client)
    old = APIClient().post(
        "/api/auth/token/", {"username": person.username, "password": PASSWORD}, format="json"
    )
    assert old.status_code == 200 and api_get(old.json()["token"]).status_code == 200
    person.set_password("a-brand-new-password-7")
    person.save()
    assert api_get(key).status_code == 403 and api_get(old.json()["token"]).status_code == 403


def test_every_page_links_the_token_page_and_the_api_docs(client, person):
    page = client.get(reverse("annotation:home")).content.decode()
    assert f'href="{reverse("tokens:tokens")}"' in page and f'href="{reverse("api-docs")}"' in page
