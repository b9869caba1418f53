"""Steps of a study day in the browser, shared by the per-workflow study-day tests
(tests/browser/test_study_day_*.py): a project from its template, invite links and sign-ups in
separate browser contexts, a stage's overlap on the Setup tab, the stranded-item warning and a
rescue by an item action, the data manager's filter, bulk tag and exports, and a published
release whose zip is checked against its manifest. Each step drives the pages only; callers
use the ORM only to assert. Screenshots go to $RUNGWISE_SCREENSHOTS when it is set."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

from django.urls import reverse
from playwright.sync_api import expect

from tests.browser.test_wide_tables_browser import PAGE_OVERFLOW, screenshot

PASSWORD = "a-long-pass-9!"
#: The elements reaching past the window's right edge (what makes a page scroll sideways).
WIDEST = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
HEIGHT = 850


def new_page(browser, width: int):
    context = browser.new_context(
        viewport={"width": width, "height": HEIGHT}, accept_downloads=True
    )
    context.set_default_timeout(20_000)
    return context.new_page()


def shot(page, name: str, width: int) -> None:
    """A screenshot of the page (full length) and, at phone width, the check that the page
    does not scroll sideways."""
    screenshot(page, f"study-day-{name}-{width}")
    if width <= 390:
        assert page.evaluate(PAGE_OVERFLOW) <= 1, (name, page.evaluate(WIDEST))


def sign_in(page, base: str, username: str, password: str) -> None:
    page.goto(base + reverse("login"))
    page.locator("input[name=username]").focus()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def project_from_template(page, base: str, *, workflow: str, name: str, slug: str, width: int):
    """New project → the workflow's template → the Setup tab."""
    page.goto(base + reverse("studio:new"))
    shot(page, "new-project", width)
    page.check(f"input[value={workflow}]")
    page.fill("#id_name", name)
    page.fill("#id_slug", slug)
    page.click("button:has-text('Create the project')")
    expect(page).to_have_url(re.compile(rf"/projects/{slug}/setup/$"))


def set_overlap(page, stage_pk: int, overlap: int) -> None:
    """Open a stage's form on the Setup tab, set its overlap and save."""
    page.locator(f"#stage-{stage_pk} > summary").click()
    page.fill(f"#overlap-{stage_pk}", str(overlap))
    page.click(f"#stage-{stage_pk} button:has-text('Save')")
    expect(page.locator("main")).to_contain_text("Stage saved")


def invite_link(page, role: str = "annotator") -> str:
    """A new invite link from the Setup tab's Members card."""
    before = page.locator("#invites input[readonly]").count()
    page.select_option("#invite-role", role)
    page.click("button:has-text('Create a link')")
    expect(page.locator("#invites input[readonly]")).to_have_count(before + 1)
    link = page.locator("#invites input[readonly]").first.input_value()
    assert "/join/" in link
    return link


def join(browser, link: str, username: str, width: int, *, slug: str):
    """A newcomer opens the invite link in a browser of their own and signs up."""
    page = new_page(browser, width)
    page.goto(link)
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("button:has-text('Create my account and join')")
    expect(page).to_have_url(re.compile(rf"/projects/{slug}/$"))
    return page


def start(page, stage_name: str | None = None) -> None:
    """From the project page: the (named) stage's Start link, then the stage page's focused
    Start button pressed with Enter."""
    name = re.compile(rf"^(Start|Continue) {re.escape(stage_name or '')}")
    page.get_by_role("link", name=name).first.click()
    expect(page.locator("[data-start]")).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def press(page, key: str) -> None:
    """A key that submits; waits until the progress line moved on (the next item or the done
    screen swapped in) and the keys are wired up again."""
    before = page.locator("#progress-line").inner_text()
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const line = document.querySelector('#progress-line');"
        " return !line || line.innerText !== before; }",
        arg=before,
    )
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def skip(page) -> None:
    """`s` opens the skip reasons with the first one focused; Enter sends it. In a field (a
    number question focuses its box) Esc leaves it first, so that `s` is not typed into it."""
    if page.evaluate("() => ['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)"):
        page.keyboard.press("Escape")
    page.keyboard.press("s")
    page.wait_for_function(
        "() => document.activeElement && document.activeElement.name === 'reason'"
    )
    press(page, "Enter")


def rescue_by_hand(page, base: str, slug: str, *, value: str, reason: str, width: int) -> str:
    """The Setup tab warns of the stranded item; its link opens the item page, which says why it
    is stuck; Resolve by hand (value, reason, confirmed) moves it on and its history says so.
    Returns the item's external id."""
    page.goto(base + reverse("studio:setup", args=[slug]))
    warning = page.locator("#stranded")
    expect(warning).to_contain_text("needs more people than can still take it")
    shot(page, "setup-stranded", width)
    link = warning.locator("a").first
    external_id = link.inner_text().strip()
    link.click()
    expect(page).to_have_url(re.compile(rf"/projects/{slug}/items/\d+/$"))
    expect(page.locator("main")).to_contain_text("Stuck")
    shot(page, "item-stuck", width)
    page.locator("summary", has_text="Resolve by hand").click()
    field = page.locator("#resolve-value")
    if field.evaluate("element => element.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)
    page.fill("#resolve-reason", reason)
    page.check("form:has(#resolve-value) input[name=confirm]")
    page.locator("form:has(#resolve-value) button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#history$"))
    expect(page.locator("#history")).to_contain_text("Resolved by hand")
    expect(page.locator("main")).not_to_contain_text("Stuck")
    shot(page, "item-rescued", width)
    return external_id


def data_manager(page, base: str, slug: str, *, search: str, tag: str, width: int):
    """Items tab: a text filter, a tag on every matching item, then the filtered view's CSV and
    JSONL. Returns (ids listed on the page, CSV rows as dicts, JSONL rows)."""
    page.goto(base + reverse("studio:items", args=[slug]))
    page.fill("#q", search)
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("h1 + p")).to_contain_text("match")
    page.fill("#bulk-tag", tag)
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text(f"tagged “{tag}”")
    shot(page, "data-manager", width)
    listed = sorted(page.locator("tbody th.dm-first a").all_inner_texts())
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    text = Path(download.value.path()).read_text(encoding="utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    with page.expect_download() as download:
        page.get_by_role("link", name="JSONL", exact=True).click()
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    return listed, rows, [json.loads(line) for line in lines if line.strip()]


def publish(page, base: str, slug: str, *, notes: str, width: int) -> dict[str, bytes]:
    """Releases tab: review v1, publish it, download its zip; every file's SHA-256, size and
    row count checked against the manifest. Returns the files by name."""
    page.goto(base + reverse("releases:releases", args=[slug]))
    page.fill("#id_notes", notes)
    page.click("button:has-text('Review v1 before publishing')")
    expect(page).to_have_url(re.compile(r"/releases/publish/$"))
    shot(page, "publish-confirm", width)
    page.click("button:has-text('Publish v1')")
    expect(page).to_have_url(re.compile(r"/releases/v1/$"))
    expect(page.locator(".badge.ok")).to_have_text("Published", timeout=60_000)
    shot(page, "release", width)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download zip").click()
    with zipfile.ZipFile(download.value.path()) as archive:
        # Keyed by the path inside the release's one top folder: the dataset folder's card
        # (hf_dataset/README.md) and shards share base names with other files.
        files = {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}
    manifest = json.loads(files["manifest.json"])
    assert manifest["algorithm"] == "sha256"
    for entry in manifest["files"]:
        data = files[entry["name"]]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["name"]
        assert len(data) == entry["bytes"], entry["name"]
        if entry.get("rows") is not None:
            assert rows_of(entry["name"], data) == entry["rows"], entry["name"]
    sums = files["SHA256SUMS"].decode().splitlines()
    assert sorted(line.split("  ")[1] for line in sums) == sorted(
        entry["name"] for entry in manifest["files"]
    )
    return files


def rows_of(name: str, data: bytes) -> int:
    """Data rows of a release file: CSV rows after the header, JSON Lines lines, Parquet rows."""
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.ParquetFile(io.BytesIO(data)).metadata.num_rows
    text = data.decode("utf-8-sig")
    if name.endswith(".csv"):
        return len(list(csv.reader(io.StringIO(text)))) - 1
    return len([line for line in text.splitlines() if line.strip()])


def csv_rows(data: bytes) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
