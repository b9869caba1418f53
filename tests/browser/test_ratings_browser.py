"""Ratings in a real browser (Playwright + Debian's Chromium against live_server): a rater works
through ten items with the keyboard only, a practice item shows its feedback, and a researcher
opens the dashboard and sees the plots. Screenshots go to screenshots/ (gitignored).

The rating form is a partial included by the generic item screen (annotation/stage.html and
static/js/annotate.js); the two rater tests are skipped while that screen is not on the branch.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import Annotation, Role
from annotation.plugins import get_plugin
from ratings import services
from ratings.models import RatingsSetup
from tests.factories import PASSWORD, make_member
from tests.ratings.conftest import csv_text, make_ratings_project, pairs_csv

SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"


pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser):
    """A page that records JavaScript errors (a re-rendered form's 400 is by design)."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # A form re-rendered with its errors answers 400 by design; anything else is a failure.
    page.on(
        "console",
        lambda message: (
            message.type == "error"
            and "status of 400" not in message.text
            and errors.append(message.text)
        ),
    )
    page.js_errors = errors
    yield page
    context.close()


def sign_in_with_the_keyboard(page, base_url: str, username: str) -> None:
    page.goto(base_url + reverse("login"))
    page.locator("input[name=username]").focus()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(base_url + reverse("annotation:home"))


def done_count(page) -> int:
    return int(page.locator("[data-done]").inner_text())


def wait_for_item(page, done: int) -> None:
    """Wait until the next item is in and takes keys: the progress says `done`, the item
    screen's script marked the swapped-in region ready (htmx focuses the new card before its
    form is wired up; keys pressed then are ignored) and the focus is on the new item."""
    page.wait_for_function(
        "([done]) => document.querySelector('[data-done]').textContent.trim() === String(done)"
        " && document.querySelector('#annotate[data-ready]')"
        " && document.activeElement && document.activeElement.id === 'item-card'",
        arg=[done],
    )


def screenshot(page, name: str, **options) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    page.wait_for_timeout(250)  # let CSS transitions finish
    page.screenshot(path=str(SCREENSHOTS / name), **options)


def test_a_rater_rates_ten_items_with_the_keyboard_only(live_server, page):
    project = make_ratings_project(overlap=2)
    pairs = [
        (f"k{n}", f"The storm {n} hit the coast.", f"The power {n} went out.", "causal", "", "")
        for n in range(3)
    ]
    services.pairs_import(project=project, content=pairs_csv(pairs), filename="pairs.csv")
    setup = RatingsSetup.objects.get(project=project)
    rater = make_member(project, Role.ANNOTATOR, username="rosa")
    sign_in_with_the_keyboard(page, live_server.url, "rosa")
    page.goto(live_server.url + reverse("annotation:stage", args=[setup.rating_stage_id]))
    page.keyboard.press("Enter")  # the focused Start button: GET never leases
    page.wait_for_selector(".item-form")

    # Enter with no rating chosen submits nothing and says what to do.
    page.keyboard.press("Enter")
    assert "Choose a rating first" in page.locator("[data-rate-hint]").inner_text()
    assert done_count(page) == 0

    expected = []
    for step in range(10):
        sentence = page.locator(".rate-sentence")
        connective = sentence.locator("mark.connective").inner_text()
        assert connective in ("so", "because", "then", "after")
        assert f" {connective} " in f" {sentence.inner_text()} "
        if step == 4:
            # "I can't judge this" from the keyboard: c, type the reason, Enter.
            page.keyboard.press("c")
            page.keyboard.type("I don't know this storm")
            page.keyboard.press("Enter")
            expected.append(None)
        else:
            value = [7, 3, 10, 1, None, 9, 5, 10, 2, 6][step]
            key = "0" if value == 10 else str(value)
            page.keyboard.press(key)
            pressed = page.locator(f'[data-rate-point="{value}"]')
            assert pressed.get_attribute("aria-pressed") == "true"
            assert page.locator('[data-rate-point][aria-pressed="true"]').count() == 1
            if step == 2:
                screenshot(page, "ratings-rate-screen.png")
            page.keyboard.press("Enter")
            expected.append(value)
        wait_for_item(page, step + 1)
    assert done_count(page) == 10
    stored = list(
        Annotation.objects.filter(annotator=rater).order_by("pk").values_list("payload", flat=True)
    )
    assert [payload.get("value") for payload in stored] == expected
    assert stored[4] == {"value": None, "cannot_judge": True, "reason": "I don't know this storm"}
    assert page.js_errors == []


def test_without_javascript_a_rating_button_submits_its_rating(live_server, browser):
    project = make_ratings_project(overlap=1)
    services.pairs_import(
        project=project, content=pairs_csv([("n1", "It rained.", "The match was off.", "", "", "")]), filename="p.csv"
    )  # fmt: skip
    setup = RatingsSetup.objects.get(project=project)
    rater = make_member(project, Role.ANNOTATOR, username="nojs")
    context = browser.new_context(
        viewport={"width": 1280, "height": 860}, java_script_enabled=False
    )
    page = context.new_page()
    try:
        sign_in_with_the_keyboard(page, live_server.url, "nojs")
        page.goto(live_server.url + reverse("annotation:stage", args=[setup.rating_stage_id]))
        page.locator("[data-start]").click()  # GET never leases; Start does
        from playwright.sync_api import expect

        page.wait_for_url("**/annotate/*/")
        # Nothing hidden without the script (waits for the item page to be laid out).
        expect(page.locator("[data-rate-reason]")).to_be_visible()
        page.get_by_role("button", name="8", exact=True).click()
        page.wait_for_load_state()
        assert "1 done" in page.locator("#progress-line").inner_text()
        page.get_by_role("checkbox", name="I can't judge this").check()
        page.locator("[data-rate-reason-input]").fill("unclear")
        page.get_by_role("button", name="Submit").click()
        page.wait_for_load_state()
        assert "2 done" in page.locator("#progress-line").inner_text()
    finally:
        context.close()
    payloads = list(
        Annotation.objects.filter(annotator=rater).order_by("pk").values_list("payload", flat=True)
    )
    assert payloads == [{"value": 8}, {"value": None, "cannot_judge": True, "reason": "unclear"}]


def test_a_practice_item_shows_its_feedback_before_moving_on(live_server, page):
    project = make_ratings_project(overlap=2)
    practice = csv_text(
        ["pair_id", "sentence_a", "sentence_b", "purpose", "connective", "expected_min", "expected_max", "feedback"],
        [["practice-1", "The glass fell off the table.", "It shattered on the floor.", "practice", "so", "7", "10",
          "The fall causes the shattering, which is what 'so' says."]],
    )  # fmt: skip
    services.pairs_import(project=project, content=practice, filename="practice.csv")
    setup = RatingsSetup.objects.get(project=project)
    make_member(project, Role.ANNOTATOR, username="pia")
    sign_in_with_the_keyboard(page, live_server.url, "pia")
    page.goto(live_server.url + reverse("annotation:stage", args=[setup.practice_stage_id]))
    page.keyboard.press("Enter")  # the focused Start button: GET never leases
    page.wait_for_selector(".item-form")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    # The engine's practice feedback (annotation/practice.py), as for every kind: the answer
    # is stored, and the screen says how it compares before the next item.
    feedback = page.locator("[data-practice-feedback]")
    feedback.wait_for(state="visible")
    text = feedback.inner_text()
    assert "Not quite" in text and "Your answer: 2" in text
    assert "the known answer: from 7 to 10" in text
    assert "The fall causes the shattering" in text
    assert page.evaluate("!!document.activeElement.closest('[data-practice-feedback]')")
    assert done_count(page) == 1
    assert Annotation.objects.get(item_stage__stage=setup.practice_stage).payload == {"value": 2}
    screenshot(page, "ratings-practice-feedback.png")
    page.keyboard.press("Enter")  # continues: the next item, or the end of the practice
    page.wait_for_selector("[data-practice-feedback]", state="detached")
    assert Annotation.objects.filter(annotator__username="pia").count() == 1
    assert page.js_errors == []


def test_a_researcher_opens_the_dashboard_and_sees_the_plots(live_server, page):
    researcher = make_member(
        make_ratings_project(slug="unrelated-project"), Role.RESEARCHER, username="rhea"
    )
    get_plugin("ratings").demo(users={"researcher": researcher})
    sign_in_with_the_keyboard(page, live_server.url, "rhea")
    dashboard = live_server.url + reverse("ratings:dashboard", args=["ratings-demo"])
    page.goto(dashboard)
    # The analysis is computed by the worker (here: in-process) and polled in.
    page.wait_for_selector("#analysis[aria-busy=false] #reliability")
    plots = page.locator("svg.plot")
    assert plots.count() == 2
    for index in range(2):
        box = plots.nth(index).bounding_box()
        assert box["width"] > 400 and box["height"] > 150
    assert "Krippendorff's α, ordinal" in page.locator("#reliability").inner_text()
    assert "pilot-15" in page.locator("#raters").inner_text()  # the simulated careless rater
    screenshot(page, "ratings-dashboard.png", full_page=True)

    # Switch to the imported ratings and pick the model run: htmx swaps the analysis in place.
    page.get_by_role("link", name="Imported").click()
    page.wait_for_url(re.compile(r".*source=historic.*"))
    page.get_by_role("link", name="demo-model (simulated)").click()
    page.locator("svg.plot").nth(2).wait_for()
    assert page.locator("svg.plot").count() == 3
    assert "Confusion matrix" in page.locator("#models").locator("..").inner_text()
    assert re.search(r"run=\d+", page.url)
    page.locator("#models").scroll_into_view_if_needed()
    screenshot(page, "ratings-dashboard-model.png", full_page=True)
    assert page.js_errors == []


def test_an_admin_uploads_pairs_and_sees_each_bad_row(live_server, page, tmp_path):
    project = make_ratings_project(slug="uploads")
    make_member(project, Role.ADMIN, username="ada")
    sign_in_with_the_keyboard(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("ratings:import", args=[project.slug]))
    bad = tmp_path / "pairs.csv"
    bad.write_text(
        pairs_csv(
            [
                ("1", "The dam broke.", "The valley flooded.", "causal", "hand-written", ""),
                ("2", "", "The bell rang.", "temporal", "", ""),
                ("1", "Ana sang.", "Ben danced.", "unrelated", "", ""),
            ]
        )
    )
    page.locator("#pairs-file").set_input_files(str(bad))
    page.get_by_role("button", name="Import pairs").click()
    rows = page.locator(".row-errors tbody tr")
    assert rows.count() == 2
    assert "missing sentence A" in rows.nth(0).inner_text()
    assert "already used on line 2" in rows.nth(1).inner_text()
    screenshot(page, "ratings-import-errors.png", full_page=True)
    good = tmp_path / "good.csv"
    good.write_text(pairs_csv([("1", "The dam broke.", "The valley flooded.", "causal", "", "")]))
    page.locator("#pairs-file").set_input_files(str(good))
    page.get_by_role("button", name="Import pairs").click()
    assert "Imported 1 pair as 8 items" in page.locator("#messages").inner_text()
    assert "The dam broke, so the valley flooded." in page.locator(".sample-list").inner_text()
    screenshot(page, "ratings-import.png", full_page=True)
    assert page.js_errors == []


def test_s_then_enter_skips_a_rating_item(live_server, page):
    """The skip works from the keyboard on the rating screen too: "s" opens the reasons with the
    first one focused and Enter sends it (the rating form used to take the Enter)."""
    project = make_ratings_project(overlap=1)
    pairs = [("s1", "The storm hit the coast.", "The power went out.", "causal", "", "")]
    services.pairs_import(project=project, content=pairs_csv(pairs), filename="pairs.csv")
    setup = RatingsSetup.objects.get(project=project)
    make_member(project, Role.ANNOTATOR, username="sam")
    sign_in_with_the_keyboard(page, live_server.url, "sam")
    page.goto(live_server.url + reverse("annotation:stage", args=[setup.rating_stage_id]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.keyboard.press("s")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('[data-done]') === null"
        " || document.querySelector('#progress-line').textContent.includes('0 done')"
    )
    from annotation.models import Assignment

    page.wait_for_timeout(500)
    skipped = Assignment.objects.filter(annotator__username="sam", status="skipped")
    assert skipped.count() == 1 and skipped.get().skip_reason
    assert not Annotation.objects.filter(annotator__username="sam").exists()


def test_twenty_keys_pressed_at_once_save_ten_ratings(live_server, page):
    """Ten ratings typed ahead (digit, Enter, digit, Enter, …) without waiting for the screen:
    keys pressed while an answer is on its way wait for the next item (static/js/annotate.js).
    (Overlap 2, so that no answer completes an item: tasks run inline in tests, and SQLite's
    shared in-memory test database locks whole tables, so the background thread that takes a
    completed item's work off the request is tested apart, in tests/test_inprocess.py.)"""
    project = make_ratings_project(overlap=2)
    pairs = [
        (f"f{n}", f"The storm {n} hit the coast.", f"The power {n} went out.", "causal", "", "")
        for n in range(3)
    ]
    services.pairs_import(project=project, content=pairs_csv(pairs), filename="pairs.csv")
    setup = RatingsSetup.objects.get(project=project)
    rater = make_member(project, Role.ANNOTATOR, username="fastfingers")
    sign_in_with_the_keyboard(page, live_server.url, "fastfingers")
    page.goto(live_server.url + reverse("annotation:stage", args=[setup.rating_stage_id]))
    page.keyboard.press("Enter")
    wait_for_item(page, 0)
    page.evaluate(
        "() => { window.sawBusy = false; new MutationObserver(() => {"
        " if (document.body.classList.contains('is-saving')) window.sawBusy = true;"
        " }).observe(document.body, {attributes: true}); }"
    )

    values = [7, 3, 10, 1, 9, 5, 10, 2, 6, 4]
    for value in values:
        page.keyboard.press("0" if value == 10 else str(value))
        page.keyboard.press("Enter")

    wait_for_item(page, 10)
    page.wait_for_function("() => !document.body.classList.contains('is-saving')")
    assert page.evaluate("() => window.sawBusy")
    assert page.locator("#key-queue[data-refused]").count() == 0
    stored = Annotation.objects.filter(annotator=rater).order_by("pk")
    assert [answer.payload.get("value") for answer in stored] == values
    assert page.js_errors == []
