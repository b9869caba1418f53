"""Each role's home in a real browser (1366 and 390 px): the links it offers lead to the pages
the role works on, and nothing runs off the side of a phone; and under DEBUG (as `make run`)
a refused htmx form shows its error in place, inside the styled page."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation import services
from annotation.models import Role
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import annotate_stage, make_member, make_project, make_verify_stage, pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1366, 390)


def overflow(page) -> int:
    """How far the document is wider than the window (0 when nothing runs off the side)."""
    return page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )


def wide_elements(page) -> list[str]:
    """The elements that reach past the window's right edge (for the failure message)."""
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .filter(e => !e.closest('.table-wrap, .studio-table-scroll'))
            .slice(0, 8)
            .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
    )


@pytest.fixture
def project_with_work():
    project, verify, label, people = pipeline(overlap=2, items=3, annotators=2)
    annotate_stage(verify, people, lambda person, item: "keep")
    annotate_stage(label, people, lambda person, item: ["causal", "temporal"][people.index(person)])
    make_member(project, username="rita", role=Role.REVIEWER)
    make_member(project, username="rosa", role=Role.RESEARCHER)
    make_member(project, username="adam", role=Role.ADMIN)
    make_member(project, username="ana")
    services.items_create(  # work left for the annotator who has not started yet
        project=project,
        rows=[{"external_id": f"new-{n}", "payload": {"text": f"New {n}."}} for n in range(2)],
    )
    return project


@pytest.mark.parametrize("width", WIDTHS)
def test_every_role_lands_on_a_home_that_leads_to_its_work(
    live_server, browser, project_with_work, width
):
    project = project_with_work
    expected = {
        # reviewer: the adjudication queue with its count (every label item split 1–1)
        "rita": ("Adjudication", reverse("agreement:adjudication", args=[project.slug])),
        "rosa": ("Agreement", reverse("agreement:dashboard", args=[project.slug])),
        "adam": ("Setup", reverse("studio:setup", args=[project.slug])),
        "ana": ("Start", reverse("annotation:stage", args=[project.stages.first().pk])),
    }
    for username, (link_text, url) in expected.items():
        context = browser.new_context(viewport={"width": width, "height": 850})
        context.set_default_timeout(10_000)
        page = context.new_page()
        sign_in_with_the_keyboard(page, live_server.url, username)
        assert "You don't annotate in this stage" not in page.content()
        assert overflow(page) <= 0, (username, width)
        page.screenshot(path=f"/tmp/home-{username}-{width}.png", full_page=True)
        if username == "rita":
            expect(page.locator(".home-links")).to_contain_text("3 waiting")
        link = page.get_by_role("link", name=link_text).first
        link.click()
        page.wait_for_url(live_server.url + url)
        page.screenshot(path=f"/tmp/home-{username}-{width}-next.png", full_page=True)
        assert overflow(page) <= 0, (username, width, page.url, wide_elements(page))
        context.close()


def test_under_debug_a_refused_skip_shows_its_error_in_the_styled_page(live_server, page, settings):
    """A skip with "Another reason" left empty answers 400; under DEBUG django-htmx's debug
    script used to replace the whole document with the bare fragment."""
    settings.DEBUG = True
    settings.INTERNAL_IPS = ["127.0.0.1"]
    project = make_project(slug="debug-on")
    stage = make_verify_stage(project, overlap=1)
    services.items_create(
        project=project, rows=[{"external_id": "only", "payload": {"text": "It rained."}}]
    )
    make_member(project, username="ada")
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")  # Start
    page.wait_for_selector(".item-form")
    page.locator(".skip summary").click()
    page.locator(".skip-other button").click()  # "Skip" with no reason typed
    error = page.locator("#annotate .error, #annotate [role=alert]").first
    expect(error).to_be_visible()
    # Still the whole styled page around it: header, stylesheet, the item itself.
    assert page.locator("header").count() >= 1
    assert page.evaluate("() => document.styleSheets.length") >= 1
    expect(page.locator(".item-head")).to_contain_text("only")
    page.screenshot(path="/tmp/debug-skip-error.png", full_page=True)
