"""Site-wide protections: sign-in lockout, proxies that cannot be spoofed, production settings
that refuse public defaults, a health probe that leaks nothing, API docs without a CDN, a
Content-Security-Policy, and demo users only where they are safe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.urls import reverse

from tests.factories import PASSWORD, make_user

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.django_db


def test_repeated_wrong_passwords_lock_the_account_from_that_address(client):
    user = make_user()
    for _ in range(4):
        response = client.post(reverse("login"), {"username": user.username, "password": "nope"})
        assert response.status_code == 200  # the form again, with its error
    fifth = client.post(reverse("login"), {"username": user.username, "password": "nope"})
    assert fifth.status_code == 429
    locked = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert locked.status_code == 429 and b"Too many sign-in attempts" in locked.content
    # The admin's login counts the same attempts.
    admin = client.post(
        "/admin/login/", {"username": user.username, "password": PASSWORD, "next": "/admin/"}
    )
    assert admin.status_code == 429
    # Another address is not locked out (no one can lock a colleague out from elsewhere).
    elsewhere = client.post(
        reverse("login"),
        {"username": user.username, "password": PASSWORD},
        REMOTE_ADDR="10.9.8.7",
    )
    assert elsewhere.status_code == 302


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=8)
def test_one_address_failing_on_many_accounts_is_locked_out(client):
    """Password spraying: one wrong password on each of N accounts from one address locks the
    address (LOGIN_ADDRESS_FAILURE_LIMIT), for every account, through the login page and the
    token endpoint alike; other addresses are not locked, and the sprayer's own successful
    sign-in does not reset the count."""
    users = [make_user() for _ in range(9)]
    own = users.pop()
    for user in users[:4]:
        response = client.post(reverse("login"), {"username": user.username, "password": "nope"})
        assert response.status_code == 200
    # a successful sign-in in between clears its own account's failures only
    assert (
        client.post(reverse("login"), {"username": own.username, "password": PASSWORD}).status_code
        == 302
    )
    client.logout()
    codes = [
        client.post(
            "/api/auth/token/" if index % 2 else reverse("login"),
            {"username": user.username, "password": "nope"},
        ).status_code
        for index, user in enumerate(users[4:])
    ]
    assert codes[-1] in (400, 429)  # the eighth failure, on an eighth account
    for user in (users[0], own):
        locked = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
        assert locked.status_code == 429 and b"Too many sign-in attempts" in locked.content
    token = client.post("/api/auth/token/", {"username": own.username, "password": PASSWORD})
    assert token.status_code == 400 and "token" not in token.json()
    elsewhere = client.post(
        reverse("login"), {"username": own.username, "password": PASSWORD}, REMOTE_ADDR="10.9.8.7"
    )
    assert elsewhere.status_code == 302


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=8)
def test_fewer_failures_across_accounts_than_the_address_limit_lock_nothing_but_their_account(
    client,
):
    users = [make_user() for _ in range(3)]
    for _ in range(5):  # the per-account limit stays 5
        client.post(reverse("login"), {"username": users[0].username, "password": "nope"})
    client.post(reverse("login"), {"username": users[1].username, "password": "nope"})
    assert (
        client.post(
            reverse("login"), {"username": users[0].username, "password": PASSWORD}
        ).status_code
        == 429
    )
    for user in users[1:]:  # 6 failures from this address, under 8: the others sign in
        assert (
            client.post(
                reverse("login"), {"username": user.username, "password": PASSWORD}
            ).status_code
            == 302
        )
        client.logout()


def test_the_token_endpoint_counts_failures_too(client):
    user = make_user()
    for _ in range(5):
        client.post("/api/auth/token/", {"username": user.username, "password": "nope"})
    response = client.post("/api/auth/token/", {"username": user.username, "password": PASSWORD})
    # Locked: even the right password gets no token (the API's usual 400 for a failed sign-in).
    assert response.status_code == 400 and "token" not in response.json()


@override_settings(
    REST_FRAMEWORK={
        **__import__("django.conf").conf.settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"auth": "3/min", "submit": "off"},
    }
)
def test_rotating_x_forwarded_for_does_not_bypass_the_api_throttle(client):
    from django.core.cache import cache

    cache.clear()
    codes = [
        client.post(
            "/api/auth/token/",
            {"username": "nobody", "password": "x"},
            HTTP_X_FORWARDED_FOR=f"203.0.113.{number}",
        ).status_code
        for number in range(6)
    ]
    assert codes.count(429) >= 3, codes


def _settings_import(**env):
    clean = {key: value for key, value in os.environ.items() if key not in {"SECRET_KEY", "DEBUG"}}
    clean.update(env)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings;"
         " print(settings.SESSION_COOKIE_SECURE, settings.SECURE_SSL_REDIRECT)"],
        cwd=REPO, env={**clean, "DJANGO_SETTINGS_MODULE": "rungwise.settings"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_public_site_refuses_to_start_with_the_built_in_secret_key():
    refused = _settings_import(ALLOWED_HOSTS="rungwise.example.org")
    assert refused.returncode != 0 and "SECRET_KEY is not set" in refused.stderr
    hardened = _settings_import(ALLOWED_HOSTS="rungwise.example.org", SECRET_KEY="x" * 50)
    assert hardened.returncode == 0 and hardened.stdout.split() == ["True", "True"]
    local = _settings_import()
    assert local.returncode == 0 and local.stdout.split() == ["False", "False"]


def test_the_health_probe_names_no_database_error(client, monkeypatch, caplog):
    from django.db import connection

    def broken(*args, **kwargs):
        raise RuntimeError("password authentication failed for user secret_admin")

    monkeypatch.setattr(connection, "cursor", broken)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "error", "database": "unavailable"}
    assert "secret_admin" in caplog.text  # in the server's log, for the operators


def test_the_api_docs_load_swagger_from_this_site_under_a_content_security_policy(client):
    user = make_user()
    client.force_login(user)
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200
    for cdn in ("cdn.jsdelivr", "unpkg.com", "cdnjs"):
        assert cdn not in html
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert "<script>" not in html.replace(" ", "")  # the split view keeps scripts in files


def test_demo_users_are_refused_on_a_site_others_can_reach():
    with override_settings(ALLOWED_HOSTS=["rungwise.example.org"], SERVES_BEYOND_LOOPBACK=True):
        with pytest.raises(CommandError, match="Refusing to create the demo users"):
            call_command("seed_demo")
    from django.contrib.auth import get_user_model

    assert not get_user_model().objects.filter(username="admin").exists()


def test_every_response_carries_the_policy_django_csp_builds_from_settings(client):
    """rungwise.middleware.CSPMiddleware serves the site's policy from a cache: the header must be
    the one django-csp builds, on pages and on JSON alike, follow a change of settings, and leave
    views that change the policy (the MTurk entry's frame-ancestors) to django-csp."""
    from csp.utils import build_policy

    expected = build_policy()
    user = make_user()
    client.force_login(user)
    for path in ("/", "/api/projects/", "/healthz"):
        assert client.get(path).headers["Content-Security-Policy"] == expected, path
    changed = {"DIRECTIVES": {"default-src": ["'none'"], "img-src": ["'self'"]}}
    with override_settings(CONTENT_SECURITY_POLICY=changed):
        header = client.get("/api/projects/").headers["Content-Security-Policy"]
        assert header == build_policy() and "default-src 'none'" in header
    assert client.get("/api/projects/").headers["Content-Security-Policy"] == expected
