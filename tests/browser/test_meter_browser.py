"""METER's stages in a real browser, with the keyboard only: verify (K keeps, 1–3 reject with
a reason), check (Enter), the two editors at once in two browsers (typing, Tab, a live "was:"
line), the vote (digit keys) and the filter (K)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.models import Item, ItemStage
from review.meter import services
from review.meter.fixtures import ENTRIES, PAIRS
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def meter():
    from annotation import services as engine

    project = services.meter_project_create(slug="meter-b", name="METER", seed=3)
    engine.items_create(
        project=project,
        rows=[
            {"external_id": p["pair_id"], "payload": dict(p), "group": p["pair_id"]}
            for p in PAIRS[:2]
        ],
    )
    people = [make_member(project, username=name) for name in ("ann", "ben", "cat")]
    return project, {s.slug: s for s in project.stages.all()}, people


def start(page, base, stage):
    page.goto(base + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.wait_for_selector("#annotate[data-ready]", state="attached")  # keys are wired up


def press(page, key: str) -> None:
    """Press a key that submits, and wait until the progress line moved on (the next item or
    the done screen swapped in)."""
    before = page.locator("#progress-line").inner_text()
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const line = document.querySelector('#progress-line');"
        " return !line || line.innerText !== before; }",
        arg=before,
    )
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def test_every_meter_stage_with_the_keyboard_only(live_server, browser, meter):
    project, stages, people = meter
    base = live_server.url
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in people]
    pages = [context.new_page() for context in contexts]
    for page, person in zip(pages, people, strict=True):
        page.set_default_timeout(10_000)
        sign_in_with_the_keyboard(page, base, person.username)

    # Verify: ann and ben keep both pairs; cat keeps one and rejects the other as ambiguous.
    for index, page in enumerate(pages):
        start(page, base, stages["verify"])
        for turn in range(2):
            press(page, "1" if index == 2 and turn == 1 else "k")
    from annotation.services.outcomes import item_stage_resolve

    for item_stage in ItemStage.objects.filter(stage=stages["verify"], state="resolving"):
        item_stage_resolve(item_stage_id=item_stage.pk)  # the worker's job, when there is none
    rejected = Item.objects.get(project=project, status="discarded")
    kept = Item.objects.get(project=project, status="accepted")
    reason = ItemStage.objects.get(item=rejected).annotations.get(payload__value="reject").payload
    assert reason["reason"] == "ambiguous"

    report = services.entries_import_text(
        project=project,
        text=json.dumps({"pair_id": kept.external_id, "questions": ENTRIES["esl-0001"]}) + "\n",
    )
    assert report.ok
    edit = stages["edit"]

    # Check: ann ticks a flag with Space and presses Enter.
    start(pages[0], base, edit)
    pages[0].locator("input[value='L2.correct:incomplete']").focus()
    pages[0].keyboard.press("Space")
    press(pages[0], "Enter")
    entry_stage = ItemStage.objects.get(stage=edit)
    item_stage_resolve(item_stage_id=entry_stage.pk)

    # The two editors at once, in two browsers; each sees the checker's flag, not the other.
    for page in pages[1:]:
        start(page, base, edit)
        assert "L2.correct:incomplete" in page.content()
    field = pages[1].locator("textarea[name=L1_question]")
    field.focus()
    pages[1].keyboard.press("Control+A")
    pages[1].keyboard.type("What closed the school on Monday?")
    assert pages[1].locator(".meter-field.changed .meter-was").first.is_visible()
    assert "What closed the school" not in pages[2].content()
    press(pages[1], "Control+Enter")  # from inside the text field
    pages[2].locator("button:has-text('Submit my edit')").focus()  # cat changes nothing
    press(pages[2], "Enter")
    item_stage_resolve(item_stage_id=entry_stage.pk)

    # The vote: ann and ben choose edit A (key 2), cat the original (key 1).
    for index, page in enumerate(pages):
        start(page, base, edit)
        assert "Edit A" in page.content() and "What closed the school" in page.content()
        press(page, "1" if index == 2 else "2")
    item_stage_resolve(item_stage_id=entry_stage.pk)
    entry = Item.objects.get(external_id=kept.external_id + "/entry")
    assert entry.version == 2
    assert entry.payload["questions"][0]["question"] == "What closed the school on Monday?"

    # The filter: a discard with nothing ticked is refused, in words and in view (the entry is
    # long: the error would sit below the fold); then all three keep with K.
    for index, page in enumerate(pages):
        start(page, base, stages["filter"])
        if index == 0:
            page.keyboard.press("d")
            error = page.wait_for_selector("#item-card .error-box")
            assert "Nothing is ticked" in error.inner_text()
            box = error.bounding_box()
            height = page.viewport_size["height"]
            assert box is not None and 0 <= box["y"] and box["y"] + 20 <= height, box
            page.wait_for_selector("#annotate[data-ready]", state="attached")
        press(page, "k")
    item_stage_resolve(item_stage_id=ItemStage.objects.get(stage=stages["filter"]).pk)
    entry.refresh_from_db()
    assert entry.status == "accepted"
    for context in contexts:
        context.close()


def test_evidence_spans_are_marked_with_the_keyboard(live_server, page):
    from annotation.models import Annotation
    from review.meter.demo import _answer, drive
    from review.meter.spans import tokens

    project = services.meter_project_create(slug="meter-spans", name="METER spans", seed=5)
    from annotation import services as engine

    engine.items_create(
        project=project,
        rows=[{"external_id": "esl-0001", "payload": dict(PAIRS[0]), "group": "esl-0001"}],
    )
    people = [make_member(project, username=name) for name in ("ann", "ben", "cat")]
    stages = {s.slug: s for s in project.stages.all()}
    drive(stages["verify"], people, _answer)
    assert services.entries_import_text(
        project=project, text=json.dumps({"pair_id": "esl-0001", "questions": ENTRIES["esl-0001"]})
    ).ok
    drive(stages["edit"], people, _answer)
    drive(stages["filter"], people, _answer)
    assert services.evidence_open(project=project, sample=5, seed=1) == 1

    sign_in_with_the_keyboard(page, live_server.url, "ann")
    start(page, live_server.url, stages["evidence"])
    page.wait_for_selector("[data-spans][data-ready]")  # the marker's script is wired up
    page.keyboard.press("1")  # question L1; the passage takes the focus
    for _ in range(2):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")  # words 2–3 marked for L1
    page.keyboard.press("u")  # …undone
    page.locator("[data-passage]").focus()
    page.keyboard.press("ArrowLeft")  # back to word 2
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Enter")  # words 2–3 again
    for level in ("2", "3"):
        page.keyboard.press(level)
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("Enter")  # one word each
    page.locator("button:has-text('Submit the spans')").focus()
    press(page, "Enter")
    text = PAIRS[0]["context"]
    words = tokens(text)
    stored = Annotation.objects.get(
        annotator__username="ann", item_stage__stage=stages["evidence"]
    ).payload["spans"]
    assert stored["L1"] == [[words[2][0], words[3][1]]]
    assert stored["L2"] == [[words[2][0], words[2][1]]] and len(stored["L3"]) == 1


def test_the_human_baseline_is_answered_with_letter_keys(live_server, page):
    """a–e choose an option of the current question and move on to the next; Enter submits."""
    from annotation import services as engine
    from review.meter.entries import clean_questions

    project = services.meter_project_create(slug="meter-abc", name="METER", seed=3)
    pair = dict(PAIRS[0])
    (entry,) = engine.items_create(
        project=project,
        rows=[
            {
                "external_id": "esl-0001/entry",
                "payload": {**pair, "questions": clean_questions(ENTRIES["esl-0001"])},
                "group": pair["pair_id"],
            }
        ],
        open_first_stage=False,
    )
    baseline = project.stages.get(kind="meter_answer")
    engine.item_stages_open(items=[entry], stage=baseline)
    make_member(project, username="dee")
    sign_in_with_the_keyboard(page, live_server.url, "dee")
    start(page, live_server.url, baseline)
    assert page.locator("[data-letter-keys]").count() == 3

    page.keyboard.press("b")
    page.keyboard.press("e")
    page.keyboard.press("a")
    checked = page.evaluate(
        "() => [...document.querySelectorAll('[data-letter-keys]')].map("
        " q => q.querySelector('input:checked').value)"
    )
    assert checked == ["1", "4", "0"]
    press(page, "Enter")
    answer = ItemStage.objects.get(item=entry, stage=baseline).annotations.get()
    assert answer.payload["answers"] == {"L1": 1, "L2": 4, "L3": 0}
