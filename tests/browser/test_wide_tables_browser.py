"""Wide tables at laptop and phone widths (Playwright + Debian's Chromium against live_server):
the disagreements table keeps its Outcome column in view at 1366 and 1280 px and, with more
raters than it gives columns, lists each item's votes by name without widening the page at
1366 and 390 px, the ratings
dashboard's tables scroll inside their own labelled region at 390 px without widening the page,
and the item screen's keyboard panel is not shown on touch screens (a button still shows the
shortcuts). Screenshots go to $RUNGWISE_SCREENSHOTS when it is set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import Role
from annotation.plugins import get_plugin
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
)
from tests.ratings.conftest import make_ratings_project

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABELS = ("causal", "temporal", "unrelated")
PAGE_OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def new_page(browser, width: int, **options):
    context = browser.new_context(viewport={"width": width, "height": 850}, **options)
    context.set_default_timeout(20_000)
    return context.new_page()


def sign_in(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form [type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def screenshot(page, name: str, full_page: bool = True) -> None:
    directory = os.environ.get("RUNGWISE_SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(directory) / f"{name}.png"), full_page=full_page)


@pytest.fixture
def split_stage(settings):
    """A label stage annotated by eight annotators with long names, every item split."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project = make_project(slug="wide-study")
    stage = make_label_stage(project, overlap=8, choices=LABELS)
    make_items(project, 6)
    people = [
        make_member(project, username=f"annotator-with-a-long-name-{rank}") for rank in range(8)
    ]
    annotate_stage(stage, people, lambda person, item: LABELS[people.index(person) % 3])
    make_member(project, Role.RESEARCHER, username="rita")
    return project, stage


@pytest.mark.parametrize("width", [1366, 1280])
def test_the_disagreements_table_keeps_its_outcome_column_in_view(
    browser, live_server, split_stage, width
):
    project, stage = split_stage
    page = new_page(browser, width)
    sign_in(page, live_server.url, "rita")
    page.goto(
        live_server.url
        + reverse("agreement:disagreements", args=[project.slug, stage.slug])
        + "?show=all"
    )
    outcome = page.get_by_role("columnheader", name="Outcome")
    box = outcome.bounding_box()
    card = page.locator("section.card").first.bounding_box()
    assert box is not None and box["width"] > 0
    # The whole Outcome column is inside the card and the window, without scrolling the table.
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"] + 1
    assert box["x"] + box["width"] <= width
    assert page.evaluate(PAGE_OVERFLOW) <= 0
    first_outcome = page.locator("td.outcome-cell").first.bounding_box()
    assert first_outcome["x"] + first_outcome["width"] <= width
    screenshot(page, f"disagreements-{width}")
    page.context.close()


@pytest.mark.parametrize("width", [1366, 390])
def test_with_many_raters_each_item_lists_its_votes_by_name_and_the_page_fits(
    browser, live_server, settings, width
):
    from agreement.pages import RATER_COLUMNS

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project = make_project(slug="crowded-study")
    stage = make_label_stage(project, overlap=3, choices=LABELS)
    make_items(project, 8)
    people = [
        make_member(project, username=f"annotator-{rank:02d}-with-a-long-name")
        for rank in range(RATER_COLUMNS + 3)
    ]
    # Three votes per item from a changing trio, two of them agreeing.
    annotate_stage(stage, people, lambda person, item: LABELS[people.index(person) % 2])
    make_member(project, Role.RESEARCHER, username="rita")
    page = new_page(browser, width)
    sign_in(page, live_server.url, "rita")
    page.goto(
        live_server.url
        + reverse("agreement:disagreements", args=[project.slug, stage.slug])
        + "?show=all"
    )
    assert page.get_by_role("columnheader", name="Votes").is_visible()
    assert page.locator("th.rater-col").count() == 0
    rows = page.locator("table.disagreements-table tbody tr")
    assert rows.count() == 8
    for index in range(rows.count()):
        assert rows.nth(index).locator(".vote-list li").count() == 3
    assert page.evaluate(PAGE_OVERFLOW) <= 0
    screenshot(page, f"disagreements-listed-{width}")
    page.context.close()


def test_the_ratings_dashboard_fits_a_phone_and_its_tables_scroll_in_their_own_region(
    browser, live_server
):
    researcher = make_member(
        make_ratings_project(slug="elsewhere"), Role.RESEARCHER, username="rhea"
    )
    get_plugin("ratings").demo(users={"researcher": researcher})
    page = new_page(browser, 390)
    sign_in(page, live_server.url, "rhea")
    page.goto(live_server.url + reverse("ratings:dashboard", args=["ratings-demo"]))
    page.wait_for_selector("#analysis[aria-busy=false] #reliability")
    assert page.evaluate(PAGE_OVERFLOW) <= 0
    regions = page.locator(".table-wrap")
    assert regions.count() >= 2
    for index in range(regions.count()):
        region = regions.nth(index)
        # A scrolling region is named and can take the focus (to scroll it with the keyboard).
        assert region.get_attribute("role") == "region" and region.get_attribute("aria-label")
        assert region.get_attribute("tabindex") == "0"
        box = region.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    screenshot(page, "ratings-dashboard-390")
    page.context.close()


def test_the_keyboard_panel_is_hidden_on_touch_screens_and_a_button_shows_the_shortcuts(
    browser, live_server
):
    project = make_ratings_project(slug="touch")
    from ratings import services
    from tests.ratings.conftest import pairs_csv

    services.pairs_import(project=project, content=pairs_csv(), filename="pairs.csv")
    make_member(project, Role.ANNOTATOR, username="tess")
    from ratings.models import RatingsSetup

    stage_id = RatingsSetup.objects.get(project=project).rating_stage_id
    stage_url = live_server.url + reverse("annotation:stage", args=[stage_id])

    desktop = new_page(browser, 1366)
    sign_in(desktop, live_server.url, "tess")
    desktop.goto(stage_url)
    desktop.wait_for_selector("#annotate[data-ready]", state="attached")
    assert desktop.locator(".shortcuts-card").is_visible()
    desktop.context.close()

    phone = new_page(browser, 390, has_touch=True, is_mobile=True, device_scale_factor=2)
    sign_in(phone, live_server.url, "tess")
    phone.goto(stage_url)
    phone.wait_for_selector("#annotate[data-ready]", state="attached")
    assert phone.evaluate("() => matchMedia('(hover: none) and (pointer: coarse)').matches")
    assert not phone.locator(".shortcuts-card").is_visible()
    button = phone.get_by_role("button", name="Keyboard shortcuts")
    assert button.is_visible()
    button.click()
    assert phone.get_by_role("dialog", name="Keyboard shortcuts").is_visible()
    assert phone.evaluate(PAGE_OVERFLOW) <= 0
    phone.keyboard.press("Escape")
    phone.locator(".side-panel").scroll_into_view_if_needed()
    # Not full-page: Chromium's full-page capture drops the touch emulation (and its media).
    screenshot(phone, "item-touch-390", full_page=False)
    phone.context.close()
