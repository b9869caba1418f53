"""The dashboards and the adjudication page in headless Chromium (Playwright): htmx sorting and
pausing without a page load, deciding an item with and without JavaScript, and what an annotator
gets. Screenshots go to $RUNGWISE_SCREENSHOTS when it is set."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.models import ItemStage, Membership, Resolution, Role
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
)

# Playwright's sync API runs an event loop in this thread; the ORM calls here are deliberate.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
LABELS = ("causal", "temporal", "none")


@pytest.fixture(scope="module")
def chromium():
    if not shutil.which(CHROMIUM):
        pytest.skip(f"Chromium is not installed at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


def new_page(chromium, *, javascript: bool = True):
    context = chromium.new_context(
        viewport={"width": 1360, "height": 900}, java_script_enabled=javascript
    )
    context.set_default_timeout(10_000)
    return context.new_page()


def screenshot(page, name: str) -> None:
    directory = os.environ.get("RUNGWISE_SCREENSHOTS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(directory) / f"{name}.png"), full_page=True)


def sign_in(page, base: str, username: str) -> None:
    page.goto(base + reverse("login"))
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form [type=submit]")
    page.wait_for_load_state("networkidle")


@pytest.fixture
def study(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project = make_project(slug="browser-study")
    stage = make_label_stage(project, overlap=3, choices=LABELS)
    make_items(project, 8)
    people = [make_member(project, username=f"ann{rank}") for rank in range(3)]

    def vote(person, item):
        index = int(item.external_id.rsplit("-", 1)[1])
        if index >= 6:  # each annotator a different label: a tie for the reviewer
            return LABELS[people.index(person)]
        return (
            LABELS[index % 3] if person is not people[2] or index % 2 else LABELS[(index + 1) % 3]
        )

    annotate_stage(stage, people, vote, seconds=lambda person: 10.0 + 5 * people.index(person))
    make_member(project, Role.RESEARCHER, username="rita")
    make_member(project, Role.REVIEWER, username="rev")
    return project, stage, people


def test_a_researcher_sorts_and_pauses_without_leaving_the_page(chromium, live_server, study):
    project, stage, people = study
    page = new_page(chromium)
    sign_in(page, live_server.url, "rita")
    page.goto(live_server.url + reverse("agreement:stage", args=[project.slug, stage.slug]))
    page.wait_for_load_state("networkidle")
    assert page.locator("img.figure-frame").first.evaluate("image => image.naturalWidth") > 0
    page.evaluate("window.__stayed = true")

    page.click("#annotators th a:has-text('Median time')")
    page.wait_for_url("**sort=median_seconds**")
    names = page.locator("#annotators tbody th").all_inner_texts()
    assert [name.split("\n")[0] for name in names] == ["ann0", "ann1", "ann2"]
    page.click("#annotators th a:has-text('Median time')")
    page.wait_for_url("**dir=desc**")
    names = page.locator("#annotators tbody th").all_inner_texts()
    assert [name.split("\n")[0] for name in names] == ["ann2", "ann1", "ann0"]

    row = page.locator("#annotators tbody tr", has=page.locator("th", has_text="ann2"))
    row.locator("summary", has_text="Pause").click()
    row.locator("input[name=reason]").fill("Disagrees on causal items")
    row.locator("button", has_text="Pause ann2").click()
    page.locator("#annotators .badge", has_text="Paused").wait_for()
    assert page.evaluate("window.__stayed") is True  # htmx swapped the table, no page load
    names = page.locator("#annotators tbody th").all_inner_texts()
    assert [name.split("\n")[0] for name in names] == ["ann2", "ann1", "ann0"]  # order kept
    membership = Membership.objects.get(user=people[2], project=project, role=Role.ANNOTATOR)
    assert membership.is_paused and membership.paused_reason == "Disagrees on causal items"
    screenshot(page, "browser-stage-dashboard")
    page.context.close()


def test_a_reviewer_decides_the_queue_with_htmx(chromium, live_server, study):
    project, stage, _ = study
    page = new_page(chromium)
    sign_in(page, live_server.url, "rev")
    page.goto(live_server.url + reverse("agreement:adjudication", args=[project.slug]))
    page.click("text=Start with the oldest")
    page.wait_for_load_state("networkidle")
    screenshot(page, "browser-adjudicate")
    first_url = page.url
    page.check("input[name=value][value=temporal]")
    page.fill("textarea[name=reason]", "A only precedes B.")
    page.click("button:has-text('Record decision')")
    page.wait_for_url(lambda url: url != first_url)
    page.check("input[name=value][value=causal]")
    page.fill("textarea[name=reason]", "A brings B about.")
    page.click("button:has-text('Record decision')")
    page.wait_for_url("**/adjudication/")
    assert page.locator("text=Nothing to decide").is_visible()
    decided = Resolution.objects.filter(item_stage__stage=stage, status="adjudicated")
    assert sorted(decided.values_list("value", flat=True)) == ["causal", "temporal"]
    assert set(decided.values_list("decided_by__username", flat=True)) == {"rev"}
    page.context.close()


def test_deciding_works_without_javascript(chromium, live_server, study):
    project, stage, _ = study
    page = new_page(chromium, javascript=False)
    sign_in(page, live_server.url, "rev")
    item_stage = ItemStage.objects.filter(stage=stage, state=ItemStage.State.ADJUDICATION).first()
    page.goto(live_server.url + reverse("agreement:adjudicate", args=[project.slug, item_stage.pk]))
    page.check("input[name=value][value=none]")
    page.fill("textarea[name=reason]", "No link between the events.")
    page.click("button:has-text('Record decision')")
    page.wait_for_load_state("load")
    item_stage.refresh_from_db()
    assert item_stage.state == ItemStage.State.RESOLVED
    assert "Decided" in page.content()
    page.context.close()


def test_an_annotator_is_turned_away_from_the_dashboards(chromium, live_server, study):
    project, stage, _ = study
    page = new_page(chromium)
    sign_in(page, live_server.url, "ann0")
    response = page.goto(
        live_server.url + reverse("agreement:stage", args=[project.slug, stage.slug])
    )
    assert response.status == 403
    assert "You can't open this page" in page.content()
    assert page.locator(".project-tabs a", has_text="Agreement").count() == 0
    page.context.close()
