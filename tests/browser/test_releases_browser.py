"""Publishing a release in a real browser: the confirmation page states what will be published
and nothing is published before its button; then the release is built and shown."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Item, Role
from releases.models import Release
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def test_publishing_asks_for_confirmation_then_builds(live_server, browser):
    project = make_project(slug="team")
    make_verify_stage(project)
    make_items(project, 5)
    Item.objects.filter(project=project, external_id__lt="item-00003").update(status="accepted")
    make_member(project, Role.ADMIN, "boss")
    base = live_server.url
    for width in (390, 1366):  # the phone cancels, the desktop publishes
        page = browser.new_context(viewport={"width": width, "height": 850}).new_page()
        page.set_default_timeout(15_000)
        sign_in_with_the_keyboard(page, base, "boss")
        page.goto(base + "/projects/team/releases/")
        page.fill("#id_notes", "First cut.")
        page.click("button:has-text('Review v1 before publishing')")
        expect(page).to_have_url(re.compile(r"/releases/publish/$"))
        expect(page.locator("h1")).to_contain_text("Publish v1?")
        expect(page.locator("[data-fact=items]")).to_contain_text("3 (3 accepted")
        expect(page.locator("[data-fact=files]")).to_contain_text("annotations.csv")
        expect(page.locator("#publish-confirm")).to_contain_text("First cut.")
        assert not Release.objects.filter(project=project).exists()
        if width == 390:
            page.click("a:has-text('Cancel')")
            expect(page).to_have_url(re.compile(r"/releases/$"))
            assert not Release.objects.filter(project=project).exists()
            page.context.close()
            continue
        expect(page.locator("button:has-text('Publish v1')")).to_be_focused()
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"/releases/v1/$"))
        expect(page.locator(".badge.ok")).to_have_text("Published")
        release = Release.objects.get(project=project)
        assert release.version == 1 and release.notes == "First cut."
        page.context.close()
