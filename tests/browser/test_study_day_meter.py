"""A METER study's first day in the browser alone, at 1366 and 390 px: an admin creates the
project from its template on *New project*, imports pairs on the Imports page (a file written
from the sample the page offers), invites three annotators who sign up in their own browsers,
and they verify by keyboard — one reject discards a pair, one skip strands another, which the
admin rescues from the Setup tab's warning with *Resolve by hand* on the item page. The admin
imports a generated entry on the METER tab; it is checked, edited, voted on and filtered by
keyboard. The data manager filters, tags in bulk and exports the filtered view (CSV, JSONL);
a release is published and its zip checked (manifest checksums and rows, METER's three levels).

The ORM only asserts. Screenshots of every page go to $RUNGWISE_SCREENSHOTS when it is set.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Item, ItemEvent
from releases.models import Release
from review.meter.fixtures import ENTRIES, PAIRS
from studio.models import ItemTag, Tag
from tests.browser.test_wide_tables_browser import PAGE_OVERFLOW, screenshot
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "a-long-pass-9!"


@pytest.fixture(autouse=True)
def quick_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- steps shared with tests/browser/test_study_day_causalt5k.py -------------------------------


def new_page(browser, width: int):
    context = browser.new_context(
        viewport={"width": width, "height": 850 if width > 500 else 844}, accept_downloads=True
    )
    context.set_default_timeout(20_000)
    return context.new_page()


def shot(page, name: str, width: int) -> None:
    screenshot(page, f"study-day-{name}-{width}")


def sign_in(page, base: str, username: str, password: str = PASSWORD) -> None:
    """Sign in with the keyboard: type, Tab, type, Enter."""
    page.goto(base + reverse("login"))
    page.locator("input[name=username]").focus()
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def create_from_template(page, base: str, template_label: str, name: str, slug: str) -> None:
    page.goto(base + reverse("annotation:home"))
    page.get_by_role("link", name="New project").first.click()
    page.get_by_label(template_label).check()
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Short name (in addresses)").fill(slug)
    page.get_by_role("button", name="Create the project").click()
    expect(page).to_have_url(re.compile(rf"/projects/{slug}/setup/$"))


def sample_header(page, base: str, slug: str, tmp_path: Path) -> list[str]:
    """The Imports page's column table and sample file: the header of the sample (which imports
    as it is) is what the test's own file is written with."""
    page.goto(base + reverse("imports:imports", args=[slug]))
    expect(page.locator("table.io-columns")).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download a sample file (CSV)").click()
    sample = tmp_path / "sample.csv"
    download.value.save_as(sample)
    return next(csv.reader(io.StringIO(sample.read_text(encoding="utf-8-sig"))))


def upload_import(page, path: Path, expected: str) -> None:
    page.set_input_files("#id_file", str(path))
    page.get_by_role("button", name="Check and import").click()
    expect(page.locator("main")).to_contain_text(expected)


def invite_link(page, base: str, slug: str) -> str:
    """One annotator link on the Setup tab's *Invite links* (any number of uses)."""
    page.goto(base + reverse("studio:setup", args=[slug]) + "#invites")
    page.select_option("#invite-role", "annotator")
    page.get_by_role("button", name="Create a link").click()
    link = page.locator("#invites input[readonly]").first.input_value()
    assert "/join/" in link
    return link


def join(browser, link: str, username: str, width: int):
    """A newcomer opens the link in their own browser and creates an account."""
    page = new_page(browser, width)
    page.goto(link)
    page.fill("#id_username", username)
    page.fill("#id_password1", NEW_PASSWORD)
    page.fill("#id_password2", NEW_PASSWORD)
    page.get_by_role("button", name="Create my account and join").click()
    expect(page).to_have_url(re.compile(r"/projects/[-\w]+/$"))
    return page


def open_stage(page, base: str, slug: str, stage_name: str) -> None:
    """From the project page to the stage (its Start / Continue link, Enter), then Enter on the
    focused Start button — unless the person already holds an item there, which the stage shows
    at once: the item is on screen with its keys wired up."""
    page.goto(base + reverse("annotation:project", args=[slug]))
    link = page.get_by_role("link", name=re.compile(rf"^(Start|Continue) {re.escape(stage_name)}$"))
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("[data-start], .item-form")
    if page.locator("[data-start]").count():
        expect(page.locator("[data-start]")).to_be_focused()
        page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def card(page) -> str:
    return page.locator("#item-card").inner_text()


def press(page, key: str) -> None:
    """Press a key that submits; wait until the progress line moved on (the next item or the
    done screen swapped in) and the keys are wired up again."""
    before = page.locator("#progress-line").inner_text()
    page.keyboard.press(key)
    page.wait_for_function(
        "before => { const line = document.querySelector('#progress-line');"
        " return !line || line.innerText !== before; }",
        arg=before,
    )
    page.wait_for_selector("#annotate[data-ready]", state="attached")


def skip(page) -> None:
    """Esc leaves a text field (a score form focuses one), S opens the skip choices with the
    focus on the first reason, Enter sends it."""
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    expect(page.locator("details.skip .skip-reasons button").first).to_be_focused()
    press(page, "Enter")


def rescue_stranded(page, base: str, slug: str, external_id: str, value: str, width: int) -> None:
    """The Setup tab's warning links to the stuck item; its page says why; *Resolve by hand*
    (a value, a reason, confirmed) moves it on and the history records it."""
    page.goto(base + reverse("studio:setup", args=[slug]))
    warning = page.locator("#stranded")
    expect(warning).to_contain_text("needs more people than can still take it")
    shot(page, "setup-stranded", width)
    warning.get_by_role("link", name=external_id).click()
    expect(page).to_have_url(re.compile(rf"/projects/{slug}/items/\d+/$"))
    expect(page.locator("main")).to_contain_text("Stuck: needs 1 more answer")
    shot(page, "item-stuck", width)
    page.locator("summary", has_text="Resolve by hand").click()
    field = page.locator("#resolve-value")
    if field.evaluate("element => element.tagName") == "SELECT":
        field.select_option(value)
    else:
        field.fill(value)  # a number (a score stage)
    page.fill("#resolve-reason", "Two readings agree; the third reader skipped it.")
    page.check("form:has(#resolve-value) input[name=confirm]")
    page.locator("form:has(#resolve-value) button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#history$"))
    expect(page.locator("#history")).to_contain_text("Resolved by hand")
    expect(page.locator("main")).not_to_contain_text("Stuck")
    shot(page, "item-rescued", width)


def data_manager(
    page, base: str, slug: str, *, stage: str, tag: str, width: int, decision="", status=""
):
    """Filter the Items tab, tag every matching item, download the filtered view as CSV and
    JSONL; returns the listed ids and both files' rows."""
    page.goto(base + reverse("studio:items", args=[slug]))
    page.select_option("#stage", stage)
    page.fill("#decision", decision)
    page.select_option("#status", status)
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("h1 + p")).to_contain_text("items match")
    page.fill("#bulk-tag", tag)
    page.check("input[name=scope][value=all]")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text(f"tagged “{tag}”")
    listed = sorted(page.locator("tbody th.dm-first a").all_inner_texts())
    with page.expect_download() as download:
        page.get_by_role("link", name="CSV", exact=True).click()
    text = download.value.path().read_text(encoding="utf-8-sig")
    csv_rows = list(csv.DictReader(io.StringIO(text)))
    with page.expect_download() as download:
        page.get_by_role("link", name="JSONL", exact=True).click()
    lines = download.value.path().read_text(encoding="utf-8").splitlines()
    jsonl_rows = [json.loads(line) for line in lines if line.strip()]
    if width < 500:
        assert page.evaluate(PAGE_OVERFLOW) <= 0  # the page does not widen on a phone
    shot(page, "data-manager", width)
    return listed, csv_rows, jsonl_rows


def publish_release(page, base: str, slug: str, tmp_path: Path, width: int) -> zipfile.ZipFile:
    """Publish v1 after its confirmation; download the zip; check every file against the
    manifest (sha256, bytes; rows where it counts them) and SHA256SUMS."""
    page.goto(base + reverse("releases:releases", args=[slug]))
    page.fill("#id_notes", "First day.")
    page.click("button:has-text('Review v1 before publishing')")
    expect(page.locator("h1")).to_contain_text("Publish v1?")
    shot(page, "publish-confirm", width)
    page.get_by_role("button", name="Publish v1").click()
    expect(page).to_have_url(re.compile(r"/releases/v1/$"))
    expect(page.locator(".badge.ok")).to_have_text("Published", timeout=60_000)
    shot(page, "release", width)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download zip").click()
    path = tmp_path / "release.zip"
    download.value.save_as(path)
    archive = zipfile.ZipFile(path)
    names = {name.split("/", 1)[1] if "/" in name else name: name for name in archive.namelist()}
    manifest = json.loads(archive.read(names["manifest.json"]))
    listed = {entry["name"]: entry for entry in manifest["files"]}
    sums = dict(
        reversed(line.split(None, 1))
        for line in archive.read(names["SHA256SUMS"]).decode().splitlines()
        if line.strip()
    )
    for name, entry in listed.items():
        data = archive.read(names[name])
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert len(data) == entry["bytes"], name
        assert sums[name.lstrip("*")] == entry["sha256"] if name in sums else True
        if entry.get("rows") is not None and name.endswith(".jsonl"):
            assert len(data.decode().splitlines()) == entry["rows"], name
    return archive


def release_file(archive: zipfile.ZipFile, name: str) -> bytes:
    (full,) = [n for n in archive.namelist() if n == name or n.endswith("/" + name)]
    return archive.read(full)


# --- the METER day ---------------------------------------------------------------------------


@pytest.mark.parametrize("width", [1366, 390])
def test_a_meter_study_day_in_the_browser_alone(live_server, browser, tmp_path, width):
    base, slug = live_server.url, f"meter-day-{width}"
    make_user("lead", is_staff=True)
    admin = new_page(browser, width)
    sign_in(admin, base, "lead")

    # 1. The project from its template.
    create_from_template(
        admin, base, "Verify / edit / filter (METER-style)", "METER first day", slug
    )
    shot(admin, "meter-setup", width)

    # 2. Pairs written with the sample file's columns, imported on the Imports page.
    header = sample_header(admin, base, slug, tmp_path)
    assert {"pair_id", "source", "context", "cause", "effect"} <= set(header)
    pairs = tmp_path / "pairs.csv"
    with pairs.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        for pair in PAIRS[:3]:
            writer.writerow({**pair, "triggers": ";".join(pair.get("triggers", []))})
    upload_import(admin, pairs, "3 new items")
    shot(admin, "meter-import", width)
    ids = [pair["pair_id"] for pair in PAIRS[:3]]
    kept, rejected, stranded = ids

    # 3. Three annotators invited by one link, each signing up in their own browser.
    link = invite_link(admin, base, slug)
    people = {name: join(browser, link, name, width) for name in ("ann", "ben", "cat")}
    shot(people["ann"], "joined", width)

    # 4a. Verify by keyboard: ann rejects one pair as ambiguous (1), cat skips another (S).
    for name, page in people.items():
        open_stage(page, base, slug, "Verify pairs")
        if name == "ann":
            shot(page, "meter-verify", width)
        for _ in range(3):
            shown = card(page)
            if name == "ann" and rejected in shown:
                press(page, "1")
            elif name == "cat" and stranded in shown:
                skip(page)
            else:
                press(page, "k")
        expect(page.locator("main")).to_contain_text("All done")
    assert Item.objects.get(external_id=rejected).status == Item.Status.DISCARDED
    assert Item.objects.get(external_id=kept).status == Item.Status.ACCEPTED

    # 5. The stranded pair, rescued from the Setup tab's warning.
    rescue_stranded(admin, base, slug, stranded, "keep", width)
    assert Item.objects.get(external_id=stranded).status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get(item__external_id=stranded).by.username == "lead"

    # 4b. A generated entry for the kept pair, imported on the METER tab.
    entries = tmp_path / "entries.jsonl"
    entries.write_text(json.dumps({"pair_id": kept, "questions": ENTRIES[kept]}) + "\n")
    admin.goto(base + reverse("meter:meter", args=[slug]))
    admin.set_input_files("#entries-file", str(entries))
    admin.get_by_role("button", name="Import entries").click()
    expect(admin.locator("main")).to_contain_text("Imported 1 entry")
    shot(admin, "meter-tab", width)

    # Check (ann: Space ticks a flag, Enter), edit (ben types, Ctrl+Enter; cat leaves it),
    # vote (the edit wins 2–1), filter (K from all three).
    ann, ben, cat = people["ann"], people["ben"], people["cat"]
    open_stage(ann, base, slug, "Check, edit and vote")
    ann.locator("input[value='L2.correct:incomplete']").focus()
    ann.keyboard.press("Space")
    shot(ann, "meter-check", width)
    press(ann, "Enter")
    open_stage(ben, base, slug, "Check, edit and vote")
    expect(ben.locator("#item-card")).to_contain_text("L2.correct:incomplete")  # the flag
    ben.locator("textarea[name=L1_question]").focus()
    ben.keyboard.press("Control+A")
    ben.keyboard.type("What closed the school on Monday?")
    shot(ben, "meter-edit", width)
    press(ben, "Control+Enter")
    open_stage(cat, base, slug, "Check, edit and vote")
    cat.locator("textarea[name=L1_question]").focus()
    press(cat, "Control+Enter")  # nothing changed: the original again
    for name, page in people.items():
        open_stage(page, base, slug, "Check, edit and vote")
        candidates = page.locator(".meter-candidate")
        texts = candidates.all_inner_texts()
        edited = next(n for n, text in enumerate(texts) if "What closed the school" in text)
        if name == "ann":
            shot(page, "meter-vote", width)
        press(page, "1" if name == "cat" else str(edited + 1))
    entry = Item.objects.get(external_id=kept + "/entry")
    assert entry.version == 2
    assert entry.payload["questions"][0]["question"] == "What closed the school on Monday?"
    for name, page in people.items():
        open_stage(page, base, slug, "Filter")
        if name == "ann":
            shot(page, "meter-filter", width)
        press(page, "k")
    entry.refresh_from_db()
    assert entry.status == Item.Status.ACCEPTED

    # 6. The data manager: the pairs kept in verification, tagged, exported as filtered.
    listed, csv_rows, jsonl_rows = data_manager(
        admin, base, slug, stage="verify", decision="keep", tag="verified day one", width=width
    )
    assert listed == sorted([kept, stranded])
    assert sorted(row[next(iter(row))] for row in csv_rows) == listed
    assert sorted(row["id"] for row in jsonl_rows) == listed
    tag = Tag.objects.get(project__slug=slug, name="verified day one")
    tagged = ItemTag.objects.filter(tag=tag).values_list("item__external_id", flat=True)
    assert set(tagged) == {kept, stranded}

    # 7. The release: checksums and rows by the manifest; METER's file with its three levels.
    archive = publish_release(admin, base, slug, tmp_path, width)
    (line,) = release_file(archive, "meter.jsonl").decode().splitlines()
    released = json.loads(line)
    assert [q["level"] for q in released["questions"]] == [1, 2, 3]
    assert all(len(q["options"]) == 5 for q in released["questions"])
    assert released["questions"][0]["question"] == "What closed the school on Monday?"
    assert Release.objects.get(project__slug=slug).status == "published"
    for page in (admin, *people.values()):
        page.context.close()
