"""A team's first week in a real browser: an admin changes a member's role on the Setup tab,
makes an API token (and uses it) then revokes it, and clones the project's setup, at 1366 and
390 px."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect
from rest_framework.test import APIClient

from annotation import services as engine
from annotation.models import Membership, Project, Role
from api.models import PersonalToken
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_label_stage, make_member, make_project, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width, height", [(1366, 850), (390, 844)])
def test_an_admin_changes_a_role_makes_and_revokes_a_token_and_clones_the_project(
    live_server, browser, width, height
):
    base = live_server.url
    boss = make_user("boss", is_staff=True)
    project = make_project(slug="week")
    engine.membership_add(project=project, user=boss, role=Role.ADMIN)
    make_label_stage(project, overlap=2)
    ada = make_member(project, Role.ANNOTATOR, "ada")
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, base, "boss")

    page.goto(base + reverse("studio:setup", args=["week"]))
    page.get_by_label("Role of ada").select_option("reviewer")
    page.locator("#members form.member-role", has=page.get_by_label("Role of ada")).get_by_role(
        "button", name="Change"
    ).click()
    expect(page.locator("#messages")).to_contain_text("Role changed")
    assert set(
        Membership.objects.filter(project=project, user=ada).values_list("role", flat=True)
    ) == {"reviewer"}

    page.locator(".menu-right summary").click()
    page.locator(".menu-right").get_by_role("link", name="API tokens").click()
    expect(page).to_have_url(re.compile(r"/accounts/tokens/$"))
    page.fill("#token-name", "nightly export")
    page.click("button:has-text('Create a token')")
    key = page.locator("#token-key").input_value()
    assert key.startswith("rw_")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/projects/").status_code == 200
    page.goto(base + reverse("tokens:tokens"))
    expect(page.locator("#tokens table")).to_contain_text("nightly export")
    page.get_by_role("button", name="Revoke nightly export").click()
    expect(page.locator("#messages")).to_contain_text("Token revoked")
    assert not PersonalToken.objects.exists()
    assert api.get("/api/projects/").status_code == 403

    page.goto(base + reverse("studio:setup", args=["week"]) + "#project")
    page.fill("#clone-name", "Week two")
    page.fill("#clone-slug", "week-two")
    page.check("input[name=with_members]")
    page.click("button:has-text('Clone')")
    expect(page).to_have_url(re.compile(r"/projects/week-two/setup/$"))
    expect(page.locator("#messages")).to_contain_text("without its data")
    copy = Project.objects.get(slug="week-two")
    assert list(copy.stages.values_list("slug", flat=True)) == ["label"]
    assert Membership.objects.filter(project=copy, user=ada, role=Role.REVIEWER).exists()
    assert not copy.items.exists()
