"""An ExpliCa-style ratings study day in the browser alone, at 1366 and 390 px (the ORM only
asserts): staff create the project from its template; the Imports tab leads to *Import ratings*,
whose pairs sample and ratings sample are downloaded and uploaded as they are; the rating stage
is set to two raters per item (from the template it needs 15, more than a pilot team: every item
would strand at once — an item open to *every* rater, a practice item, never strands, because
it never fills by design, see annotation/stranding.py); two raters join by invite links in
browsers of their own and rate by keyboard (a digit, Enter); the second skips an item, which
strands it (two raters, two needed, one gave up); the admin follows the Setup tab's warning and
resolves it by hand; the data manager filters the first pair's items, tags them and exports
them (CSV and JSONL, rows checked); v1 is published and its zip checked (manifest checksums and
row counts, ExpliCa's per-ordered-pair and per-item files). Screenshots of every page go to
$RUNGWISE_SCREENSHOTS when it is set."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Annotation, Assignment, Item, ItemEvent, Project
from tests.browser import study_day_steps as steps
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: Ratings the first rater gives, in turn (10 is typed as 0).
RATINGS = [7, 3, 10, 8]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def rate(page, value: int) -> None:
    key = "0" if value == 10 else str(value)
    page.keyboard.press(key)
    expect(page.locator(f'[data-rate-point="{value}"]')).to_have_attribute("aria-pressed", "true")
    steps.press(page, "Enter")


@pytest.mark.parametrize("width", [1366, 390])
def test_a_ratings_study_day_in_the_browser(live_server, browser, tmp_path, width):
    base, slug = live_server.url, f"rate-{width}"
    make_user("lead", is_staff=True)
    admin = steps.new_page(browser, width)
    steps.sign_in(admin, base, "lead", PASSWORD)
    steps.project_from_template(
        admin, base, workflow="ratings", name="Connectives pilot", slug=slug, width=width
    )
    project = Project.objects.get(slug=slug)
    rating = project.stages.get(slug="rate")
    assert project.kind == "ratings" and rating.overlap == 15
    steps.set_overlap(admin, rating.pk, 2)

    # Import: pairs, then earlier ratings of them, each from its sample file.
    admin.goto(base + reverse("imports:imports", args=[slug]))
    admin.get_by_role("link", name="pairs and ratings").click()
    expect(admin.locator("h1")).to_contain_text("Import pairs and ratings")
    expect(admin.locator("table.io-columns").first).to_contain_text("attention_check")
    steps.shot(admin, "ratings-import", width)
    samples = admin.get_by_role("link", name="Download a sample file (CSV)")
    for index, (name, field) in enumerate([("pairs", "#pairs-file"), ("ratings", "#ratings-file")]):
        with admin.expect_download() as download:
            samples.nth(index).click()
        path = tmp_path / f"{name}.csv"
        download.value.save_as(path)
        admin.set_input_files(field, str(path))
        admin.locator(f"form:has({field}) button[type=submit]").click()
        expect(admin.locator(".messages")).to_contain_text("Imported")
    regular = Item.objects.filter(project=project, purpose=Item.Purpose.REGULAR)
    assert regular.count() == 16  # two pairs × four connectives × two orders
    historic = Annotation.objects.filter(item_stage__stage__slug="historic")
    assert sorted(historic.values_list("payload__value", flat=True)) == [3, 8]

    # Raters by invite, each in a browser of their own.
    admin.goto(base + reverse("studio:setup", args=[slug]))
    link = steps.invite_link(admin)
    ada = steps.join(browser, link, "ada", width, slug=slug)
    ben = steps.join(browser, link, "ben", width, slug=slug)

    steps.start(ada)
    steps.shot(ada, "ratings-rate", width)
    for value in RATINGS:
        rate(ada, value)
    steps.start(ben)
    steps.skip(ben)  # it needs two raters and at most ada is left
    skipped = Assignment.objects.get(status=Assignment.Status.SKIPPED).item_stage.item
    assert Annotation.objects.filter(item_stage__item=skipped, item_stage__stage=rating).count() < 2
    rate(ben, 5)

    # The stranded item, resolved by hand from the Setup tab's warning.
    admin.goto(base + reverse("studio:setup", args=[slug]))
    expect(admin.locator("#stranded")).to_contain_text(skipped.external_id)
    rescued = steps.rescue_by_hand(
        admin, base, slug, value="6", reason="The pilot's raters agree on 6.", width=width
    )
    assert rescued == skipped.external_id
    skipped.refresh_from_db()
    assert skipped.status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get(item=skipped).by.username == "lead"

    # Data manager: the first pair's eight items by their sentence, tagged, exported.
    first = sorted(regular.filter(payload__pair_id="pair-001").values_list(
        "external_id", flat=True
    ))  # fmt: skip
    listed, rows, lines = steps.data_manager(
        admin, base, slug, search="road was icy", tag="first pair", width=width
    )
    assert listed == first and len(first) == 8
    assert sorted(row["item id"] for row in rows) == first
    assert sorted(line["id"] for line in lines) == first

    # The release: manifest checksums and row counts, ExpliCa's files.
    files = steps.publish(admin, base, slug, notes="Pilot day.", width=width)
    pairs = steps.csv_rows(files["explica_ordered_pairs.csv"])
    assert "NaN" not in files["explica_ordered_pairs.csv"].decode()
    means = steps.csv_rows(files["explica_item_means.csv"])
    assert means and all(row["item_key"].startswith(row["pair_id"]) for row in means)
    # One row per ordered pair with ratings, and the same ordered pairs in both files: which
    # of the four (two pairs × two orders) the pilot's few ratings reach depends on the
    # stage's random item order.
    labelled = [(row["pair_id"], row["order"]) for row in pairs]
    assert len(labelled) == len(set(labelled))
    assert set(labelled) == {(row["pair_id"], row["order"]) for row in means}
    assert set(labelled) <= {(p, o) for p in ("pair-001", "pair-002") for o in ("AB", "BA")}
    for page in (admin, ada, ben):
        page.context.close()
