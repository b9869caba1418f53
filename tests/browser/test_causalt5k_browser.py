"""CausalT5k's adversarial review and scoring screens in a real browser, keyboard only: P passes
a case; B opens "Break it", arrows choose the verdict, Space ticks an attack, the explanation and
the structured editor are typed into, Enter submits (the minor revision becomes the case's new
version); the scores are typed with Tab between criteria and Enter submits."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Item, ItemStage
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDS = ("T2-S1-MED-001", "T2-W9-ECO-001")


@pytest.fixture
def ct5k():
    project = causalt5k_project_create(slug="ct5k-b", name="CausalT5k", seed=3)
    engine.items_create(
        project=project,
        rows=[{"external_id": c["case_id"], "payload": c} for c in CASES if c["case_id"] in IDS],
        open_first_stage=False,
    )
    causalt5k_review_open(project=project)
    people = [make_member(project, username=name) for name in ("ann", "ben")]
    return project, {s.slug: s for s in project.stages.all()}, people


def start(page, base, stage):
    page.goto(base + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.wait_for_selector("#annotate[data-ready]")


def press(page, key: str) -> None:
    before = page.locator("#progress-line").inner_text()
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const line = document.querySelector('#progress-line');"
        " return !line || line.innerText !== before; }",
        arg=before,
    )
    page.wait_for_selector("#annotate[data-ready]", state="attached")  # keys work again


def tab_to(page, name: str, most: int = 4) -> None:
    """Press Tab until the field ``name`` has the focus (at most ``most`` presses; none when a
    form's data-autofocus field already has it)."""
    if page.evaluate("document.activeElement.name") == name:
        return
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == name:
            return
    focused = page.evaluate("document.activeElement.outerHTML.slice(0, 120)")
    raise AssertionError(f"{name} not reached with Tab; focus on {focused}")


def test_review_and_scoring_with_the_keyboard_only(live_server, browser, ct5k):
    from annotation.services.outcomes import item_stage_resolve

    project, stages, people = ct5k
    base = live_server.url
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, base, "ann")

    start(page, base, stages["review"])
    for _ in IDS:
        case_id = page.locator(".ct5k-meta code").first.inner_text()
        assert "Gold label" in page.content()  # reviewers see the gold answer
        if case_id == "T2-S1-MED-001":
            press(page, "p")
            continue
        page.keyboard.press("b")  # opens "Break it" and focuses the verdict ("minor")
        assert page.evaluate("document.activeElement.value") == "minor"
        page.keyboard.press("Tab")  # the first attack
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")  # "ambiguous" is the fourth
        assert page.evaluate("document.activeElement.value") == "ambiguous"
        page.keyboard.press("Space")
        page.locator("textarea[name=explanation]").focus()
        page.keyboard.type("The claim says crime but the data are recorded crime.")
        tab_to(page, "edit_claim")  # the editor: the scenario, then the claim
        page.keyboard.press("Control+A")
        page.keyboard.type("Cutting police numbers in a district will lower its recorded crime.")
        assert page.locator(".meter-field.changed .meter-was").first.is_visible()
        press(page, "Control+Enter")  # from inside the editor's text field
    for item_stage in ItemStage.objects.filter(stage=stages["review"], state="resolving"):
        item_stage_resolve(item_stage_id=item_stage.pk)
    edited = Item.objects.get(external_id="T2-W9-ECO-001")
    assert edited.version == 2
    assert edited.payload["claim"].startswith("Cutting police numbers")
    annotation = ItemStage.objects.get(item=edited, stage=stages["review"]).annotations.get()
    assert annotation.payload["attacks"] == ["ambiguous"]

    # Scoring: both cases, four numbers each, Tab between them, Enter submits.
    start(page, base, stages["score"])
    for index, _ in enumerate(IDS):
        if index == 1:
            # A full page load: the first score field has the focus as after an htmx swap, so
            # digits go into it and Enter submits (not a link of the page).
            page.reload()
            page.wait_for_selector("#annotate[data-ready]", state="attached")
        assert page.evaluate("document.activeElement.name") == "score_structural_validity"
        for score in ("10", "9", "10", "9"):
            page.keyboard.type(score)
            page.keyboard.press("Tab")
        page.keyboard.press("Shift+Tab")
        press(page, "Enter")
    scores = ItemStage.objects.filter(stage=stages["score"])
    assert sum(s.annotations.count() for s in scores) == 2
    stored = scores.first().annotations.get().payload
    assert stored["composite"] == 9.5 and stored["verdict"] == "keep"
    context.close()
