"""CausalT5k's pressure-variant screens in a real browser, keyboard only: the writer types the
pressure into both versions (Tab between them, Tab to Submit, Enter); the checker sees each
version as a word diff and confirms both with O."""

from __future__ import annotations

import pytest

from annotation import services as engine
from annotation.models import Annotation, Item
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create
from review.causalt5k.pressure import confirmed_variants, pressure_open
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.browser.test_causalt5k_browser import press, start
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_writing_and_checking_pressure_variants_with_the_keyboard_only(live_server, browser):
    from annotation.services.outcomes import item_stage_resolve

    project = causalt5k_project_create(slug="ct5k-pressure", name="CausalT5k", seed=3)
    engine.items_create(
        project=project,
        rows=[
            {"external_id": c["case_id"], "payload": c}
            for c in CASES
            if c["case_id"] == "T2-S1-MED-001"
        ],
        open_first_stage=False,
    )
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    assert pressure_open(project=project) == 1
    make_member(project, username="ann")
    make_member(project, username="ben")
    stages = {s.slug: s for s in project.stages.all()}

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, live_server.url, "ann")
    start(page, live_server.url, stages["pressure"])
    assert page.evaluate("document.activeElement.name") == "social"
    page.keyboard.press("Control+Home")
    page.keyboard.type("Everyone at my clinic insists this is true. ")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "epistemic"
    page.keyboard.press("Control+Home")
    page.keyboard.type("A famous study proved this beyond doubt. ")
    for _ in range(4):  # past the comment's summary to Submit
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.type") == "submit":
            break
    page.screenshot(path="/tmp/ct5k-pressure-write.png", full_page=True)
    press(page, "Enter")
    stored = Annotation.objects.get(item_stage__stage=stages["pressure"]).payload
    assert stored["social"].startswith("Everyone at my clinic insists this is true.")
    item_stage_resolve(
        item_stage_id=Annotation.objects.get(item_stage__stage=stages["pressure"]).item_stage_id
    )
    context.close()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, live_server.url, "ben")
    start(page, live_server.url, stages["pressure_check"])
    assert (
        page.locator(".ct5k-diff ins").first.inner_text()
        == "Everyone at my clinic insists this is true."
    )
    page.screenshot(path="/tmp/ct5k-pressure-check.png", full_page=True)
    press(page, "o")
    check = Annotation.objects.get(item_stage__stage=stages["pressure_check"])
    assert check.payload["verdict"] == "ok"
    item_stage_resolve(item_stage_id=check.item_stage_id)
    assert set(confirmed_variants(project)) == {"T2-S1-MED-001"}
    context.close()
