"""The data manager (the Items tab) in a real browser at 1366 and 390 px: an admin filters the
items, tags all matching ones in bulk, then downloads the filtered view (CSV) and finds exactly
the rows the page lists; on a phone the page does not widen, the table scrolls inside its own
region and the item column stays in view. Screenshots go to $RUNGWISE_SCREENSHOTS when set."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Item, Role
from tests.browser.test_wide_tables_browser import PAGE_OVERFLOW, new_page, screenshot, sign_in
from tests.factories import annotate_stage, make_member, pipeline

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def decided(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project, verify, _, people = pipeline(overlap=3, items=8, annotators=3)
    rejected = set(
        Item.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)[:3]
    )
    annotate_stage(verify, people, lambda person, item: "reject" if item.pk in rejected else "keep")
    make_member(project, Role.ADMIN, username="ada")
    return project


@pytest.mark.parametrize("width", [1366, 390])
def test_filter_bulk_tag_and_export_the_filtered_view(browser, live_server, decided, width):
    project = decided
    page = new_page(browser, width, accept_downloads=True)
    sign_in(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("studio:items", args=[project.slug]))
    page.select_option("#stage", "verify")
    page.fill("#decision", "keep")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("h1 + p")).to_contain_text("5 items match")
    screenshot(page, f"data-manager-filtered-{width}")

    page.fill("#bulk-tag", "second look")
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("5 items tagged “second look”.")
    listed = sorted(page.locator("tbody th.dm-first a").all_inner_texts())
    assert len(listed) == 5

    with page.expect_download() as download:
        page.get_by_role("link", name="CSV").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text(encoding="utf-8-sig"))))
    assert sorted(row[0] for row in rows[1:]) == listed

    if width == 390:
        assert page.evaluate(PAGE_OVERFLOW) <= 0
        region = page.locator(".dm-scroll")
        assert region.get_attribute("role") == "region"
        first = page.locator("tbody th.dm-first").first
        before = first.bounding_box()
        region.evaluate("element => { element.scrollLeft = 400; }")
        assert region.evaluate("element => element.scrollLeft") > 0  # it does scroll
        after = first.bounding_box()
        assert abs(after["x"] - before["x"]) < 1  # the item column stays in view
    screenshot(page, f"data-manager-tagged-{width}")
    page.context.close()


def test_a_bulk_action_without_ticked_items_says_so_above_the_form(browser, live_server, decided):
    page = new_page(browser, 1366)
    sign_in(page, live_server.url, "ada")
    page.goto(live_server.url + reverse("studio:items", args=[decided.slug]))
    page.fill("#bulk-tag", "x")
    page.get_by_role("button", name="Apply").click()
    error = page.locator("#bulk-error")
    expect(error).to_contain_text("Tick at least one item")
    expect(error).to_be_focused()
    page.context.close()
