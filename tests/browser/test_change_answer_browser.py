"""Going back in a real browser: answer an item, press Backspace on the next one, change the
answer on the change page, see "Saved", and carry on with the next item."""

from __future__ import annotations

import os

import pytest
from django.urls import reverse

from annotation.models import Annotation
from tests.browser import test_annotator_flow as flow
from tests.browser.test_annotator_flow import progress, sign_in_with_the_keyboard

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Where the test leaves its screenshots when asked (RUNGWISE_TEST_SHOTS=/some/dir).
SHOTS = os.environ.get("RUNGWISE_TEST_SHOTS")

#: The annotator flow's project (five pairs, overlap 2) and its annotator "ada".
pairs = flow.stage_with_pairs


def shot(page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def wait_until_ready(page) -> None:
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def test_an_annotator_goes_back_with_backspace_changes_the_answer_and_carries_on(
    live_server, page, pairs
):
    stage, annotator = pairs
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    wait_until_ready(page)
    answered = page.locator(".item-head strong").inner_text()
    page.keyboard.press("k")
    page.wait_for_function(
        "() => document.querySelector('#progress-line').innerText.startsWith('1 done')"
    )
    wait_until_ready(page)
    following = page.locator(".item-head strong").inner_text()
    assert following != answered
    assert page.locator("[data-change-previous]").is_visible()
    shot(page, "change-01-next-item")

    page.keyboard.press("Backspace")
    page.wait_for_selector("[data-changing]")
    wait_until_ready(page)
    assert page.locator(".item-head strong").inner_text() == answered
    assert "now keep" in page.locator("[data-changing]").inner_text()
    assert page.locator("button.is-current[value=keep]").count() == 1
    shot(page, "change-02-change-page")

    page.keyboard.press("r")
    page.wait_for_selector(".messages .notice.success")
    saved = page.locator(".messages").inner_text()
    assert "Saved" in saved and answered in saved and "reject" in saved
    wait_until_ready(page)
    # Back on the item screen with the item still held, the count unchanged: counted once.
    assert page.locator(".item-head strong").inner_text() == following
    assert progress(page).startswith("1 done")
    shot(page, "change-03-saved")

    page.keyboard.press("k")
    page.wait_for_function(
        "() => document.querySelector('#progress-line').innerText.startsWith('2 done')"
    )
    current = list(
        Annotation.objects.filter(annotator=annotator)
        .order_by("assignment_id")
        .values_list("payload__value", "version")
    )
    assert current == [("reject", 2), ("keep", 1)]
    assert Annotation.all_versions.filter(annotator=annotator).count() == 3

    page.goto(live_server.url + reverse("annotation:answers", args=[stage.pk]))
    assert page.locator("[data-change-answer]").count() == 2
    shot(page, "change-04-recent-answers")
