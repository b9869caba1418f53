"""Single sign-on against a local OpenID provider (tests/sso/provider.py): the whole code flow
over HTTP — Rungwise redirects, the provider approves, Rungwise exchanges the code, checks the
id token against the provider's keys and signs the person in by their verified e-mail."""

from __future__ import annotations

from io import StringIO
from urllib.parse import urlparse

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Membership, Role
from sso.models import DomainMembership
from tests.factories import PASSWORD, make_project, make_user

pytestmark = pytest.mark.django_db

User = get_user_model()


def ada(**extra) -> dict:
    return {"sub": "ada-1", "email": "Ada@Uni.example", "email_verified": True, **extra}


def round_trip(client, provider, next_url: str = ""):
    """Start at Rungwise, let the provider answer, come back; returns the callback's response."""
    start = client.get(reverse("sso:start") + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302
    assert start["Location"].startswith(provider.issuer + "/authorize?")
    answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = urlparse(answer.headers["Location"])
    assert back.path == reverse("sso:callback")
    return client.get(back.path + "?" + back.query)


def signed_in_user(client):
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id) if user_id else None


def refusal(client) -> str:
    page = client.get(reverse("login"))
    return page.content.decode()


def test_a_new_person_with_a_verified_address_gets_an_account_and_their_domains_roles(client, sso):
    project = make_project(slug="crowd-week")
    DomainMembership.objects.create(project=project, domain="@UNI.example", role=Role.ANNOTATOR)
    other = make_project(slug="elsewhere")
    DomainMembership.objects.create(project=other, domain="other.example", role=Role.ANNOTATOR)
    sso.signed_in = ada(given_name="Ada", family_name="Lovelace")

    response = round_trip(client, sso, next_url="/projects/")

    assert response.status_code == 302 and response["Location"] == "/projects/"
    user = signed_in_user(client)
    assert user is not None and user.email == "Ada@uni.example"  # domain normalised
    assert user.username == "Ada" and user.first_name == "Ada"
    assert not user.has_usable_password()
    assert set(Membership.objects.filter(user=user).values_list("project__slug", "role")) == {
        ("crowd-week", "annotator")
    }


def test_an_existing_account_is_matched_by_its_verified_address_whatever_the_case(client, sso):
    existing = make_user("lovelace", email="ada@uni.example")
    make_user("someone-else", email="bob@uni.example")
    project = make_project(slug="later-rule")
    DomainMembership.objects.create(project=project, domain="uni.example", role=Role.REVIEWER)
    sso.signed_in = ada()

    round_trip(client, sso)

    assert signed_in_user(client) == existing
    assert User.objects.count() == 2
    # A rule added after the account existed reaches it at its next sign-in.
    assert Membership.objects.filter(user=existing, project=project, role="reviewer").exists()


def test_an_address_the_provider_has_not_verified_signs_nobody_in(client, sso):
    make_user("lovelace", email="ada@uni.example")
    sso.signed_in = ada(email_verified=False)

    response = round_trip(client, sso)

    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert signed_in_user(client) is None
    assert "has not verified the e-mail address Ada@Uni.example" in refusal(client)
    assert User.objects.count() == 1


@pytest.mark.parametrize(
    "tamper, reason",
    [
        ({"aud": "another-app"}, "meant for another application"),
        ({"iss": "http://elsewhere.example"}, "unexpected issuer"),
        ({"nonce": "replayed"}, "could not be verified"),
        ({"exp": 1}, "could not be verified"),
    ],
)
def test_an_id_token_for_another_client_issuer_nonce_or_time_is_refused(
    client, sso, tamper, reason
):
    sso.signed_in = ada()
    sso.token_overrides = tamper

    round_trip(client, sso)

    assert signed_in_user(client) is None
    assert reason in refusal(client)
    assert not User.objects.exists()


def test_an_id_token_signed_with_a_key_the_provider_does_not_publish_is_refused(client, sso):
    sso.signed_in = ada()
    sso.sign_with_other_key = True

    round_trip(client, sso)

    assert signed_in_user(client) is None
    assert "could not be verified" in refusal(client)


def test_a_callback_replayed_with_a_used_state_signs_nobody_in(client, sso):
    sso.signed_in = ada()
    start = client.get(reverse("sso:start"))
    answer = requests.get(start["Location"], allow_redirects=False, timeout=10)
    back = urlparse(answer.headers["Location"])
    client.get(back.path + "?" + back.query)
    assert signed_in_user(client) is not None
    client.logout()

    again = client.get(back.path + "?" + back.query)

    assert again.status_code == 302 and signed_in_user(client) is None


def test_unknown_people_are_refused_when_account_creation_is_off(client, sso, settings):
    settings.OIDC_CREATE_USER = False
    sso.signed_in = ada()

    round_trip(client, sso)

    assert signed_in_user(client) is None
    assert "ask a project admin to invite you" in refusal(client)
    assert not User.objects.exists()


def test_two_accounts_with_one_address_are_not_guessed_between(client, sso):
    make_user("one", email="ada@uni.example")
    make_user("two", email="ADA@uni.example")
    sso.signed_in = ada()

    round_trip(client, sso)

    assert signed_in_user(client) is None
    assert "Several Rungwise accounts use your e-mail address" in refusal(client)


def test_the_sign_in_page_offers_the_provider_beside_the_password_form(client, sso):
    page = client.get(reverse("login") + "?next=/projects/").content.decode()
    assert "Sign in with Test University" in page
    assert reverse("sso:start") + "?next=/projects/" in page
    assert 'name="password"' in page


def test_with_local_passwords_off_only_the_provider_signs_people_in(client, sso, settings):
    settings.RUNGWISE_LOCAL_PASSWORDS = False
    settings.AUTHENTICATION_BACKENDS = ["sso.backends.VerifiedEmailBackend"]
    make_user("lovelace", email="ada@uni.example")

    page = client.get(reverse("login")).content.decode()
    assert "Sign in with Test University" in page and 'name="password"' not in page
    refused = client.post(reverse("login"), {"username": "lovelace", "password": PASSWORD})
    assert refused.status_code == 403 and signed_in_user(client) is None
    assert "Password sign-in is switched off" in refused.content.decode()
    assert client.get(reverse("password_reset")).status_code == 404

    sso.signed_in = ada()
    round_trip(client, sso)
    assert signed_in_user(client).username == "lovelace"


def test_without_a_provider_the_sso_pages_do_not_exist_and_passwords_work(client):
    assert client.get(reverse("sso:start")).status_code == 404
    assert client.get(reverse("sso:callback") + "?code=x&state=y").status_code == 404
    page = client.get(reverse("login")).content.decode()
    assert "Sign in with" not in page and 'name="password"' in page


def test_sso_discover_prints_the_endpoints_from_the_discovery_document(provider):
    out = StringIO()
    call_command("sso_discover", provider.issuer, stdout=out)
    lines = dict(line.split("=", 1) for line in out.getvalue().split())
    assert lines == {
        key: value for key, value in provider.settings().items() if key.startswith("OIDC_OP_")
    }
