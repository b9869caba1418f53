"""A refused upload is reported where the eye is: after a bad METER entries file and a bad
CARL-GT edge list, at a laptop's 1366 × 768 and a phone's 390 × 844, the error is inside the
viewport, has the focus and is an alert (announced by screen readers)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Role
from graphs import services as graph_services
from review.meter import services as meter_services
from review.meter.fixtures import PAIRS
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

VIEWPORTS = [(1366, 768), (390, 844)]


def assert_in_view_focused_alert(page, selector: str) -> str:
    page.wait_for_selector(selector)
    found = page.evaluate(
        """selector => {
            const box = document.querySelector(selector);
            const rect = box.getBoundingClientRect();
            return {
                focused: document.activeElement === box,
                role: box.getAttribute("role"),
                top: rect.top,
                height: window.innerHeight,
                text: box.innerText,
            };
        }""",
        selector,
    )
    assert found["focused"], found
    assert found["role"] == "alert"
    assert 0 <= found["top"] < found["height"] - 40, found  # its first lines are on screen
    return found["text"]


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_a_bad_meter_entries_file_is_reported_in_view(live_server, browser, width, height):
    project = meter_services.meter_project_create(slug="meter-up", name="METER", seed=3)
    engine.items_create(
        project=project,
        rows=[
            {"external_id": p["pair_id"], "payload": dict(p), "group": p["pair_id"]}
            for p in PAIRS[:2]
        ],
    )
    admin = make_member(project, Role.ADMIN, username="ada")
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        sign_in_with_the_keyboard(page, live_server.url, admin.username)
        page.goto(live_server.url + reverse("meter:meter", args=[project.slug]))
        page.set_input_files(
            "#entries-file",
            files=[
                {
                    "name": "entries.jsonl",
                    "mimeType": "application/json",
                    "buffer": b'{"pair_id": "nope", "questions": []}\n',
                }
            ],
        )
        page.get_by_role("button", name="Import entries").click()
        text = assert_in_view_focused_alert(page, "#upload-error")
        assert "nothing was imported" in text and "entries.jsonl" in text
    finally:
        context.close()


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_a_bad_edge_list_is_reported_in_view(live_server, browser, width, height):
    project = graph_services.carlgt_project_create(
        slug="carlgt-up", name="CARL-GT", overlap=1, seed=2
    )
    admin = make_member(project, Role.ADMIN, username="ada")
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        sign_in_with_the_keyboard(page, live_server.url, admin.username)
        page.goto(live_server.url + reverse("graphs:scores", args=[project.slug]))
        page.set_input_files(
            "#graph-file",
            files=[
                {"name": "cycle.csv", "mimeType": "text/csv", "buffer": b"cause,effect\nA,B\nB,A\n"}
            ],
        )
        page.fill("#graph-name", "loop")
        page.get_by_role("button", name="Generate questions").click()
        text = assert_in_view_focused_alert(page, "#generate-error")
        assert "cycle.csv" in text
        assert page.input_value("#graph-name") == "loop"  # what was typed stays
    finally:
        context.close()
