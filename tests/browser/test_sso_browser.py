"""Single sign-on in a real browser, against the local OpenID provider the tests start
(tests/sso/provider.py): a newcomer from a domain with a rule clicks *Sign in with …*, comes
back signed in with their project waiting; someone whose address the provider has not verified
comes back to the sign-in page with the reason where the eye is. At 1366 and 390 px."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Role
from sso.models import DomainMembership
from tests.factories import make_label_stage, make_project
from tests.sso.provider import Provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def provider(settings):
    running = Provider().start()
    for name, value in running.settings().items():
        setattr(settings, name, value)
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "sso.backends.VerifiedEmailBackend",
    ]
    yield running
    running.stop()


@pytest.mark.parametrize("width, height", [(1366, 850), (390, 844)])
def test_a_newcomer_signs_in_with_the_provider_and_finds_their_project(
    live_server, browser, provider, width, height
):
    project = make_project(slug="lab-week")
    make_label_stage(project, overlap=2)
    DomainMembership.objects.create(project=project, domain="uni.example", role=Role.ANNOTATOR)
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(15_000)

    provider.signed_in = {"sub": "u1", "email": "grace@uni.example", "email_verified": False}
    page.goto(live_server.url + reverse("login"))
    page.get_by_role("link", name="Sign in with Test University").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("has not verified the e-mail address grace@uni.example")
    expect(alert).to_be_in_viewport()

    provider.signed_in = {"sub": "u1", "email": "grace@uni.example", "email_verified": True}
    page.get_by_role("link", name="Sign in with Test University").click()
    page.wait_for_url(live_server.url + reverse("annotation:home"))
    expect(page.locator("body")).to_contain_text("Lab Week")
    expect(page.locator(".menu-username")).to_have_text("grace")
