"""A CARL-GT study day in the browser alone, at 1366 and 390 px (the ORM only asserts): staff
create the project from its template and set its answer stage to two people per question; the
Imports tab leads to the CARL-GT questions page, whose sample file is downloaded and uploaded as
it is; two people join by invite links in browsers of their own and answer by keyboard (y / n,
a number then Enter); the second skips a question, which strands it (exactly two people, two
needed); the admin follows the Setup tab's warning and resolves it by hand; the data manager
filters, tags the matching questions and exports them (CSV and JSONL, rows checked); v1 is
published and its zip checked (manifest checksums and row counts, CARL-GT's line-aligned files).
Screenshots of every page go to $RUNGWISE_SCREENSHOTS when it is set."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Annotation, Assignment, Item, ItemEvent, Project
from tests.browser import study_day_steps as steps
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def answer(page, question_answers: dict[str, str]) -> None:
    """Answer the question on screen by keyboard: y / n, or the number typed then Enter."""
    question = page.locator("[data-field=question]").inner_text().strip()
    value = question_answers[question]
    if value in ("yes", "no"):
        steps.press(page, value[0])
    else:
        field = page.locator("input[name=value]")
        expect(field).to_be_focused()
        page.keyboard.type(value)
        steps.press(page, "Enter")


@pytest.mark.parametrize("width", [1366, 390])
def test_a_carlgt_study_day_in_the_browser(live_server, browser, tmp_path, width):
    base, slug = live_server.url, f"carl-{width}"
    make_user("lead", is_staff=True)
    admin = steps.new_page(browser, width)
    steps.sign_in(admin, base, "lead", PASSWORD)
    steps.project_from_template(
        admin, base, workflow="carlgt", name="Graph questions", slug=slug, width=width
    )
    project = Project.objects.get(slug=slug)
    stage = project.stages.get()
    assert project.kind == "carlgt" and stage.overlap == 3
    steps.set_overlap(admin, stage.pk, 2)
    steps.shot(admin, "carlgt-setup", width)

    # Import: the Imports tab links the workflow's own page; its sample imports as it is.
    admin.goto(base + reverse("imports:imports", args=[slug]))
    admin.get_by_role("link", name="questions", exact=True).click()
    expect(admin.locator("h1")).to_contain_text("Import CARL-GT questions")
    expect(admin.locator("table.io-columns")).to_contain_text("counterfactual")
    steps.shot(admin, "carlgt-import", width)
    with admin.expect_download() as download:
        admin.get_by_role("link", name="Download a sample file (CSV)").click()
    sample = tmp_path / "questions.csv"
    download.value.save_as(sample)
    truth = {
        row["question"]: row["answer"]
        for row in csv.DictReader(io.StringIO(sample.read_text(encoding="utf-8-sig")))
    }
    admin.set_input_files("#questions-file", str(sample))
    admin.get_by_role("button", name="Check and import").click()
    expect(admin.locator(".messages")).to_contain_text("Imported 2 questions")
    assert Item.objects.filter(project=project).count() == 2

    # Members by invite, each in a browser of their own.
    admin.goto(base + reverse("studio:setup", args=[slug]))
    link = steps.invite_link(admin)
    ada = steps.join(browser, link, "ada", width, slug=slug)
    ben = steps.join(browser, link, "ben", width, slug=slug)

    steps.start(ada)
    steps.shot(ada, "carlgt-question", width)
    answer(ada, truth)
    answer(ada, truth)
    expect(ada.locator("main")).to_contain_text("All done")
    steps.start(ben)
    answer(ben, truth)
    steps.skip(ben)  # the second question now has one answer, one skip: nobody left to take it
    expect(ben.locator("main")).to_contain_text("All done")
    skipped = Assignment.objects.get(status=Assignment.Status.SKIPPED).item_stage.item

    # The stranded question, rescued by hand from the Setup tab's warning.
    value = truth[skipped.payload["question"]]
    rescued = steps.rescue_by_hand(
        admin, base, slug, value=value, reason="Ada's answer is the known one.", width=width
    )
    assert rescued == skipped.external_id
    skipped.refresh_from_db()
    assert skipped.status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get(item=skipped).by.username == "lead"

    # Data manager: the d-separation question by its text, tagged, exported.
    listed, rows, lines = steps.data_manager(
        admin, base, slug, search="d-separated", tag="checked", width=width
    )
    dsep = Item.objects.get(project=project, payload__task="d_separation")
    assert listed == [dsep.external_id]
    assert [row["item id"] for row in rows] == [dsep.external_id]
    assert [line["id"] for line in lines] == [dsep.external_id]
    assert len(lines[0]) == len(rows[0])  # the same columns in both
    assert list(dsep.tags.values_list("name", flat=True)) == ["checked"]

    # The release: manifest checksums and row counts, the benchmark's line-aligned files.
    files = steps.publish(admin, base, slug, notes="Pilot day.", width=width)
    for task, graph in (("d_separation", 1), ("intervention", 100)):
        stem = f"carlgt_{task}_{graph}"
        assert files[f"{stem}_questions.txt"].decode().strip() in truth
        assert files[f"{stem}_answers.txt"].decode().strip() in ("yes", "2.5")
        assert files[f"{stem}_human.txt"].decode().strip()
    human = steps.csv_rows(files["carlgt_human_answers.csv"])
    assert len(human) == Annotation.objects.filter(item_stage__stage=stage).count() == 3
    for page in (admin, ada, ben):
        page.context.close()
