"""A person's account by mail (rungwise/accounts.py and Django's password reset, rungwise/urls.py):
a password reset link, and an e-mail change confirmed by a signed link sent to the new address.
Mail goes to Django's test outbox (the console under `make run`, SMTP when EMAIL_HOST is set)."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.urls import reverse

from rungwise.accounts import email_change_link
from tests.factories import PASSWORD, make_user

pytestmark = pytest.mark.django_db


def link_in(message) -> str:
    return re.search(r"https?://\S+", message.body).group(0)


def test_a_forgotten_password_is_reset_by_a_mailed_link(client):
    ada = make_user("ada", email="ada@example.org")
    assert reverse("password_reset") in client.get(reverse("login")).content.decode()
    sent = client.post(reverse("password_reset"), {"email": "ada@example.org"})
    assert sent.status_code == 302 and sent.url == reverse("password_reset_done")
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ada@example.org"]
    assert "Reset your Rungwise password" in mail.outbox[0].subject
    link = link_in(mail.outbox[0])
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-fresh-password-31", "new_password2": "a-fresh-password-31"},
    )
    assert done.status_code == 302 and done.url == reverse("password_reset_complete")
    ada.refresh_from_db()
    assert ada.check_password("a-fresh-password-31")
    again = client.get(link, follow=True)
    assert "This link no longer works" in again.content.decode()


def test_an_unknown_address_sends_nothing_and_reads_the_same(client):
    sent = client.post(reverse("password_reset"), {"email": "nobody@example.org"})
    assert sent.status_code == 302 and sent.url == reverse("password_reset_done")
    assert mail.outbox == []


def test_a_new_address_is_used_once_its_mailed_link_is_confirmed(client):
    ada = make_user("ada", email="old@example.org")
    client.force_login(ada)
    page = client.get(reverse("email_change")).content.decode()
    assert "old@example.org" in page
    sent = client.post(reverse("email_change"), {"email": "new@example.org", "password": PASSWORD})
    assert sent.status_code == 302
    ada.refresh_from_db()
    assert ada.email == "old@example.org"  # nothing changes before the link is followed
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["new@example.org"]
    link = link_in(mail.outbox[0])
    shown = client.get(link)
    assert shown.status_code == 200 and "new@example.org" in shown.content.decode()
    ada.refresh_from_db()
    assert ada.email == "old@example.org"  # opening the link (a mail scanner) changes nothing
    confirmed = client.post(link)
    assert confirmed.status_code == 302
    ada.refresh_from_db()
    assert ada.email == "new@example.org"
    stale = client.post(link)  # the address it was made for is gone: the link is spent
    assert stale.status_code == 400 and "no longer works" in stale.content.decode()


@pytest.mark.parametrize(
    "posted, words",
    [
        ({"email": "new@example.org", "password": "wrong"}, "not your password"),
        ({"email": "not-an-address", "password": PASSWORD}, "valid email"),
        ({"email": "old@example.org", "password": PASSWORD}, "already your address"),
    ],
)
def test_a_refused_change_says_why_and_sends_nothing(client, posted, words):
    client.force_login(make_user("ada", email="old@example.org"))
    refused = client.post(reverse("email_change"), posted)
    assert refused.status_code == 400 and words in refused.content.decode()
    assert mail.outbox == []


def test_a_forged_or_foreign_link_changes_nothing(client):
    ada = make_user("ada", email="ada@example.org")
    token = email_change_link(user=ada, email="evil@example.org")
    forged = token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb")
    response = client.post(reverse("email_change_confirm", args=[forged]))
    assert response.status_code == 400
    ada.refresh_from_db()
    assert ada.email == "ada@example.org"


def test_the_account_menu_links_the_change_and_the_form_needs_a_sign_in(client):
    response = client.get(reverse("email_change"))
    assert response.status_code == 302 and reverse("login") in response.url
    client.force_login(make_user("ada"))
    home = client.get(reverse("annotation:home")).content.decode()
    assert f'href="{reverse("email_change")}"' in home
