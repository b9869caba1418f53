"""A CausalT5k study's first day in the browser alone, at 1366 and 390 px: an admin creates the
project from its template on *New project*, imports cases on the Imports page (a file written
with the columns of the sample the page offers: two near-duplicates among them), invites two
annotators who sign up in their own browsers, and they work every validation stage by keyboard
— the near-duplicate queue (1 keeps one case), adversarial review (P passes, B breaks: a minor
revision edited in place, a major restructure sent to the author, then removed), the author's
revision (Ctrl+Enter) and the quality score (digits, Tab, Enter). One skip on the two-scorer
stage strands a case; the admin rescues it from the Setup tab's warning with *Resolve by hand*.
The data manager filters, tags in bulk and exports the filtered view (CSV, JSONL); a release is
published and its zip checked (manifest checksums and rows, the D{n}/D{n}_L{k}.json layout).

The ORM only asserts. Screenshots of every page go to $RUNGWISE_SCREENSHOTS when it is set.
"""

from __future__ import annotations

import csv
import json

import pytest
from playwright.sync_api import expect

from annotation.models import Item, ItemEvent
from studio.models import ItemTag, Tag
from tests.browser.test_study_day_meter import (
    create_from_template,
    data_manager,
    invite_link,
    join,
    new_page,
    open_stage,
    press,
    publish_release,
    release_file,
    rescue_stranded,
    sample_header,
    shot,
    sign_in,
    skip,
    upload_import,
)
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSES, MINOR, MAJOR = "T2-W7-MED-001", "T2-W1-MED-002", "T2-W2-ECO-003"
TWIN, OTHER_TWIN = "T1-W3-MED-004", "T1-W3-MED-005"
NEW_CLAIM = "Prescribing statins to everyone would prevent some heart attacks."


@pytest.fixture(autouse=True)
def quick_media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def cases() -> list[dict[str, str]]:
    """Five small cases; the last two differ only in punctuation (one near-duplicate cluster)."""
    twin = {
        "pearl_level": "L1",
        "domain": "Medicine",
        "scenario": "In a city survey, people who drank more coffee reported more headaches; "
        "the heavy coffee drinkers also slept fewer hours on average.",
        "claim": "Coffee drinking is associated with headaches in this survey.",
        "label": "YES",
        "trap_type": "W3",
    }
    return [
        {
            "id": PASSES,
            "pearl_level": "L2",
            "domain": "Medicine",
            "scenario": "Patients who chose to take a daily statin had fewer heart attacks over "
            "ten years than those who did not; statin users also exercised more.",
            "claim": "Prescribing statins to everyone would prevent heart attacks at this rate.",
            "label": "NO",
            "trap_type": "W7",
        },
        {
            "id": MINOR,
            "pearl_level": "L2",
            "domain": "Medicine",
            "scenario": "A clinic that began sending text reminders saw fewer missed visits in "
            "the following year; it also moved to a building by the bus station.",
            "claim": "The text reminders halved missed visits.",
            "label": "NO",
            "trap_type": "W1",
        },
        {
            "id": MAJOR,
            "pearl_level": "L2",
            "domain": "Economics",
            "scenario": "Towns that opened more libraries saw unemployment fall over the "
            "decade; the same towns also gained a new motorway.",
            "claim": "Opening a library lowers unemployment.",
            "label": "NO",
            "trap_type": "W2",
        },
        {"id": TWIN, **twin},
        {"id": OTHER_TWIN, **twin, "claim": twin["claim"].replace(".", "!")},
    ]


def break_case(page, *, arrows: int, explanation: str, claim: str | None = None) -> None:
    """B opens *Break it* on the verdict (minor); ``arrows`` × ↓ moves to major / remove; Tab to
    the first attack, Space ticks it; Tab on to the explanation; for a minor revision Tab on to
    the claim in the editor; Ctrl+Enter submits from the text field."""
    page.keyboard.press("b")
    assert page.evaluate("document.activeElement.value") == "minor"
    for _ in range(arrows):
        page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == "attacks"
    page.keyboard.press("Space")
    tab_to(page, "explanation")
    page.keyboard.type(explanation)
    if claim is not None:
        tab_to(page, "edit_claim")
        page.keyboard.press("Control+A")
        page.keyboard.type(claim)
    press(page, "Control+Enter")


def tab_to(page, name: str, most: int = 10) -> None:
    """Tab until the field ``name`` has the focus."""
    for _ in range(most):
        if page.evaluate("document.activeElement.name") == name:
            return
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.name") == name


def case_id(page) -> str:
    return page.locator("#item-card .ct5k-meta code").first.inner_text()


def work_until_done(page, act) -> None:
    """Call ``act(page)`` for each item until the stage says it is all done."""
    while page.locator(".item-form").count():
        act(page)
    expect(page.locator("main")).to_contain_text("All done")


def score(page, *, values=("10", "10", "10", "10")) -> None:
    """The first score field has the focus: type, Tab, …; Shift+Tab back into the form, Enter."""
    assert page.evaluate("document.activeElement.name || ''").startswith("score_")
    for value in values:
        page.keyboard.type(value)
        page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    press(page, "Enter")


@pytest.mark.parametrize("width", [1366, 390])
def test_a_causalt5k_study_day_in_the_browser_alone(live_server, browser, tmp_path, width):
    base, slug = live_server.url, f"ct5k-day-{width}"
    make_user("lead", is_staff=True)
    admin = new_page(browser, width)
    sign_in(admin, base, "lead")

    # 1. The project from its template.
    create_from_template(
        admin, base, "Causal cases across three rungs (CausalT5k-style)", "Cases day", slug
    )

    # 2. Cases written with the sample file's columns, imported on the Imports page.
    header = sample_header(admin, base, slug, tmp_path)
    assert {"id", "pearl_level", "scenario", "label", "trap_type"} <= set(header)
    path = tmp_path / "cases.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(cases())
    upload_import(admin, path, "5 new items")
    shot(admin, "ct5k-import", width)

    # 3. Two annotators by one invite link, each in their own browser.
    link = invite_link(admin, base, slug)
    ann, ben = (join(browser, link, name, width) for name in ("ann", "ben"))

    # 4. The near-duplicate queue: ann keeps the first case of the cluster (key 1).
    open_stage(ann, base, slug, "Near-duplicate queue")
    kept_twin = ann.locator("#item-card button[data-key='1'] code").inner_text()
    assert kept_twin in (TWIN, OTHER_TWIN)
    shot(ann, "ct5k-dedup", width)
    press(ann, "1")
    dropped_twin = OTHER_TWIN if kept_twin == TWIN else TWIN
    assert Item.objects.get(external_id=dropped_twin).status == Item.Status.DISCARDED

    # Adversarial review, ann: pass two, a minor revision in place, a major restructure.
    def review(page):
        shown = case_id(page)
        if shown == MINOR:
            shot(page, "ct5k-review", width)
            break_case(
                page,
                arrows=0,
                explanation="Reminders and the move came together; the claim overstates.",
                claim="The text reminders may have reduced missed visits.",
            )
        elif shown == MAJOR:
            break_case(page, arrows=1, explanation="The motorway, not libraries, brought jobs.")
        else:
            press(page, "p")

    open_stage(ann, base, slug, "Adversarial review")
    work_until_done(ann, review)
    minor = Item.objects.get(external_id=MINOR)
    assert minor.version == 2 and minor.payload["claim"].startswith("The text reminders may")

    # The author's revision (ben): the attack is shown; a changed claim, Ctrl+Enter.
    open_stage(ben, base, slug, "Author revision")
    expect(ben.locator("#item-card")).to_contain_text("The motorway, not libraries")
    ben.locator("textarea[name=edit_claim]").focus()
    ben.keyboard.press("Control+A")
    ben.keyboard.type("Opening a library may lower unemployment.")
    shot(ben, "ct5k-author", width)
    press(ben, "Control+Enter")

    # Reviewed again (ann): still broken, removed (verdict two arrows down).
    open_stage(ann, base, slug, "Adversarial review")
    assert case_id(ann) == MAJOR
    break_case(ann, arrows=2, explanation="Still one town with a motorway; nothing to learn.")
    removed = Item.objects.get(external_id=MAJOR)
    assert removed.status == Item.Status.DISCARDED and removed.version == 2

    # Quality score, two per case: ann scores all three; ben scores two and skips the twin.
    open_stage(ann, base, slug, "Quality score")
    shot(ann, "ct5k-score", width)
    work_until_done(ann, score)

    def score_or_skip(page):
        if case_id(page) == kept_twin:
            skip(page)
        else:
            score(page)

    open_stage(ben, base, slug, "Quality score")
    work_until_done(ben, score_or_skip)
    for kept in (PASSES, MINOR):
        assert Item.objects.get(external_id=kept).status == Item.Status.ACCEPTED

    # 5. The stranded case, rescued by hand: kept.
    rescue_stranded(admin, base, slug, kept_twin, "keep", width)
    assert Item.objects.get(external_id=kept_twin).status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get(item__external_id=kept_twin).by.username == "lead"

    # 6. The data manager: the accepted cases, tagged, exported as filtered.
    listed, csv_rows, jsonl_rows = data_manager(
        admin, base, slug, stage="score", status="accepted", tag="gold day one", width=width
    )
    assert listed == sorted([PASSES, MINOR, kept_twin])
    assert sorted(row[next(iter(row))] for row in csv_rows) == listed
    assert sorted(row["id"] for row in jsonl_rows) == listed
    tag = Tag.objects.get(project__slug=slug, name="gold day one")
    tagged = ItemTag.objects.filter(tag=tag).values_list("item__external_id", flat=True)
    assert set(tagged) == set(listed)

    # 7. The release: checksums and rows by the manifest; CausalT5k's D{n}/D{n}_L{k} layout.
    archive = publish_release(admin, base, slug, tmp_path, width)
    medicine_l2 = json.loads(release_file(archive, "D4/D4_L2.json"))
    assert sorted(case["case_id"] for case in medicine_l2) == sorted([PASSES, MINOR])
    assert {case["revision"] for case in medicine_l2} == {1, 2}
    (twin,) = json.loads(release_file(archive, "D4/D4_L1.json"))
    assert twin["case_id"] == kept_twin and "author" not in twin
    print("TWIN-COMPOSITE", repr(twin.get("composite")))
    lines = release_file(archive, "causalt5k_cases.jsonl").decode().splitlines()
    assert len(lines) == 3
    assert not [n for n in archive.namelist() if n.endswith("unassigned.json")]
    for page in (admin, ann, ben):
        page.context.close()
