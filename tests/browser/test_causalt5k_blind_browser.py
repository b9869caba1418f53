"""CausalT5k's blind answer screen in a real browser, keyboard only: Y / N / A (V / I / C for
tier 3) answers a case and the next one comes; the page shows a neutral handle and none of the
case's gold fields or its canonical id."""

from __future__ import annotations

import pytest

from annotation import services as engine
from annotation.models import Annotation, Item
from review.causalt5k.blind import blind_open
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.browser.test_causalt5k_browser import press, start
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDS = ("T2-S1-MED-001", "T1-W7-MED-001", "T3-F1-HIS-001")
KEYS = {"YES": "y", "NO": "n", "AMBIGUOUS": "a", "VALID": "v", "INVALID": "i", "CONDITIONAL": "c"}


def test_answering_blind_with_the_keyboard_only(live_server, browser):
    project = causalt5k_project_create(slug="ct5k-blind", name="CausalT5k", seed=3, answerers=1)
    engine.items_create(
        project=project,
        rows=[{"external_id": c["case_id"], "payload": c} for c in CASES if c["case_id"] in IDS],
        open_first_stage=False,
    )
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    assert blind_open(project=project, sample=10, seed=2) == len(IDS)
    make_member(project, username="ann")
    stage = project.stages.get(slug="answer")
    gold = {c["case_id"]: c for c in CASES if c["case_id"] in IDS}

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, live_server.url, "ann")
    start(page, live_server.url, stage)
    answered = {}
    for number in range(len(IDS)):
        html = page.content()
        head = page.locator(".item-head strong").inner_text()
        assert head.startswith("answer/q-")
        item = Item.objects.get(project=project, external_id=head)
        case = gold[item.payload["case_id"]]
        assert case["case_id"] not in html and "Gold label" not in html
        assert case.get("rationale", "§") not in html
        label = case["label"]
        if number == 0:
            page.screenshot(path="/tmp/ct5k-blind-answer.png", full_page=True)
        press(page, KEYS[label])
        answered[case["case_id"]] = label
    got = {
        a.item_stage.item.payload["case_id"]: a.payload["label"]
        for a in Annotation.objects.filter(item_stage__stage=stage).select_related(
            "item_stage__item"
        )
    }
    assert got == answered and len(got) == len(IDS)
    context.close()
