"""An annotator's session in a real browser: sign in, work through items with the keyboard
only, watch the progress line; and the same loop with JavaScript turned off."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotation import services
from annotation.models import Annotation, Assignment
from tests.factories import PASSWORD, make_member, make_project, make_verify_stage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def stage_with_pairs():
    project = make_project(slug="browser", guidelines="Keep fluent pairs.")
    stage = make_verify_stage(project, overlap=2, instructions="Reject pairs with typos.")
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"pair-{n}",
                "payload": {
                    "sentence_a": f"The dam broke {n}.",
                    "sentence_b": f"The valley flooded {n}.",
                    "gold": "keep",
                },
            }
            for n in range(5)
        ],
    )
    annotator = make_member(project, username="ada")
    return stage, annotator


def sign_in_with_the_keyboard(page, base_url: str, username: str) -> None:
    page.goto(base_url + reverse("login"))
    page.locator("input[name=username]").focus()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(base_url + reverse("annotation:home"))


def progress(page) -> str:
    return re.sub(r"\s+", " ", page.locator("#progress-line").inner_text()).strip()


def test_an_annotator_completes_items_with_the_keyboard_and_sees_progress(
    live_server, page, stage_with_pairs
):
    stage, annotator = stage_with_pairs
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    assert "0 done · 5 left for you" in page.locator("main").inner_text()

    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")  # the focused Start button: GET never leases
    page.wait_for_selector(".item-form")
    assert progress(page) == "0 done · 5 left for you in this stage"
    # The shortcuts are on screen, and known answers are not.
    assert (
        page.locator("[data-key=k] kbd").is_visible()
        and page.locator("[data-key=r] kbd").is_visible()
    )
    assert "gold" not in page.content()
    page.evaluate("window.__sameDocument = true")

    seen = []
    for done, key in enumerate(["k", "r", "k"], start=1):
        seen.append(page.locator(".item-head strong").inner_text())
        page.keyboard.press(key)
        page.wait_for_function(
            "expected => document.querySelector('#progress-line').innerText.startsWith(expected)",
            arg=f"{done} done",
        )
        assert progress(page) == f"{done} done · {5 - done} left for you in this stage"
        # The focus moves to the new item and the screen takes keys again (#annotate[data-ready]
        # is set once the swap has settled), so the next key press acts on it.
        page.wait_for_function(
            "() => document.querySelector('#annotate[data-ready]')"
            " && document.activeElement && document.activeElement.id === 'item-card'"
        )

    # htmx swapped each item in: no page load happened in between.
    assert page.evaluate("window.__sameDocument") is True
    assert len(set(seen)) == 3
    annotations = list(Annotation.objects.filter(annotator=annotator).order_by("pk"))
    assert [a.payload["value"] for a in annotations] == ["keep", "reject", "keep"]
    assert [a.item_stage.item.external_id for a in annotations] == seen
    assert all(a.client_info == {"via": "htmx", "timing": "client"} for a in annotations)
    assert all(0 <= a.seconds_spent < 60 for a in annotations)


def test_skip_and_help_work_from_the_keyboard(live_server, page, stage_with_pairs):
    stage, annotator = stage_with_pairs
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")  # the focused Start button: GET never leases
    page.wait_for_selector(".item-form")
    page.keyboard.press("?")
    assert page.locator("#help-overlay").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#help-overlay").is_hidden()

    first = page.locator(".item-head strong").inner_text()
    page.keyboard.press("s")  # opens the skip reasons and focuses the first one
    assert page.evaluate("document.activeElement.name") == "reason"
    page.keyboard.press("Enter")
    # Functions, not bare expressions: the page's Content-Security-Policy forbids eval, which
    # Playwright uses for a bare expression.
    page.wait_for_function(
        "() => document.querySelector('#progress-line').innerText.includes('4 left')"
        " && document.querySelector('#annotate[data-ready]')"
    )
    assert page.locator(".item-head strong").inner_text() != first
    skipped = Assignment.objects.get(annotator=annotator, status=Assignment.Status.SKIPPED)
    assert skipped.item_stage.item.external_id == first and skipped.skip_reason

    # Typing a comment does not trigger shortcuts; Esc leaves the box, then k submits.
    page.locator(".comment-row summary").click()
    page.locator("textarea[name=comment]").focus()
    page.keyboard.type("keep it")
    assert Annotation.objects.count() == 0
    page.keyboard.press("Escape")
    page.keyboard.press("k")
    from playwright.sync_api import expect

    expect(page.locator("#progress-line")).to_contain_text("1 done")
    assert Annotation.objects.get().payload == {"value": "keep", "comment": "keep it"}


def test_with_javascript_off_a_plain_form_post_completes_an_item(
    live_server, page_without_javascript, stage_with_pairs
):
    page = page_without_javascript
    stage, annotator = stage_with_pairs
    page.goto(live_server.url + reverse("login"))
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.locator("[data-start]").click()  # GET never leases; Start does
    page.wait_for_selector(".item-form")
    first = page.locator(".item-head strong").inner_text()
    # No script: the shortcut hints are hidden, the buttons are plain submit buttons.
    assert not page.locator("[data-key=k] kbd").is_visible()
    assert not page.locator("[data-action=help]").is_visible()
    with page.expect_navigation():
        page.get_by_role("button", name="Keep").click()
    assert page.url == live_server.url + reverse("annotation:stage", args=[stage.pk])
    assert progress(page) == "1 done · 4 left for you in this stage"
    assert page.locator(".item-head strong").inner_text() != first
    annotation = Annotation.objects.get(annotator=annotator)
    assert annotation.payload["value"] == "keep"
    assert annotation.client_info == {"via": "form", "timing": "lease"}


def test_keys_typed_in_the_open_navigation_menu_do_not_answer_the_item(
    live_server, page, stage_with_pairs
):
    stage, annotator = stage_with_pairs
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.click("summary:has-text('Projects')")
    page.keyboard.press("k")
    page.keyboard.press("r")
    page.wait_for_timeout(300)
    assert not Annotation.objects.exists()
    page.click("summary:has-text('Projects')")  # closed again: the shortcuts work again
    page.click("main")
    page.keyboard.press("k")
    from playwright.sync_api import expect

    expect(page.locator("#progress-line")).to_contain_text("1 done")
    assert Annotation.objects.count() == 1
