"""A CausalNarratives study day in the browser alone, at 1366 and 390 px (the ORM only
asserts): staff create the project from its template and set its stage to two people per
narrative; the Imports tab leads to the narratives import page, whose JSON Lines sample is
downloaded and uploaded as it is; two people join by invite links in browsers of their own and
rebuild the chains by keyboard (j / k, Shift+↑, Enter); the second skips one, which strands it
(exactly two people, two needed); the admin follows the Setup tab's warning and finishes it by
hand with the answers it has; the data manager filters, tags the matching narrative and exports
it (CSV and JSONL, rows checked); v1 is published and its zip checked (manifest checksums and row
counts, the benchmark's JSON Lines). Screenshots of every page go to $RUNGWISE_SCREENSHOTS."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Annotation, Assignment, Item, ItemEvent, Project
from narratives.kinds import AS_ANSWERED
from tests.browser import study_day_steps as steps
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def cards(page) -> list[str]:
    return page.locator("[data-card]").evaluate_all(
        "cards => cards.map(card => card.getAttribute('data-node'))"
    )


def focused_node(page) -> str | None:
    return page.evaluate(
        "() => { const c = document.activeElement.closest('[data-card]');"
        " return c ? c.getAttribute('data-node') : null; }"
    )


def rebuild(page, orders: list[list[str]]) -> None:
    """Order the chain on screen by keyboard (its true order is the sample line whose events it
    shows), then Enter."""
    shown = cards(page)
    [truth] = [order for order in orders if sorted(order) == sorted(shown)]
    page.keyboard.press("j")  # the first card takes the focus
    for target, node in enumerate(truth):
        current = cards(page)
        at, here = current.index(node), current.index(focused_node(page))
        for _ in range(abs(at - here)):
            page.keyboard.press("j" if at > here else "k")
        for _ in range(at - target):
            page.keyboard.press("Shift+ArrowUp")
        assert cards(page)[target] == node
    steps.press(page, "Enter")


@pytest.mark.parametrize("width", [1366, 390])
def test_a_narratives_study_day_in_the_browser(live_server, browser, tmp_path, width):
    base, slug = live_server.url, f"story-{width}"
    make_user("lead", is_staff=True)
    admin = steps.new_page(browser, width)
    steps.sign_in(admin, base, "lead", PASSWORD)
    steps.project_from_template(
        admin, base, workflow="causal_narratives", name="Chains", slug=slug, width=width
    )
    project = Project.objects.get(slug=slug)
    stage = project.stages.get()
    assert project.kind == "causal_narratives" and stage.overlap == 3
    steps.set_overlap(admin, stage.pk, 2)

    # Import: the Imports tab links the workflow's own page; its sample imports as it is.
    admin.goto(base + reverse("imports:imports", args=[slug]))
    admin.get_by_role("link", name="narrative files").click()
    expect(admin.locator("h1")).to_contain_text("Import narratives")
    expect(admin.locator("table.io-columns")).to_contain_text("reverse")
    steps.shot(admin, "narratives-import", width)
    with admin.expect_download() as download:
        admin.get_by_role("link", name="Download a sample file (JSON Lines)").click()
    sample = tmp_path / "narratives.jsonl"
    download.value.save_as(sample)
    lines = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    orders = [line["nodes"] for line in lines]
    admin.set_input_files("#narratives-file", str(sample))
    admin.get_by_role("button", name="Check and import").click()
    expect(admin.locator(".messages")).to_contain_text("Imported 2 narratives")
    assert Item.objects.filter(project=project).count() == 2

    # Members by invite, each in a browser of their own.
    admin.goto(base + reverse("studio:setup", args=[slug]))
    link = steps.invite_link(admin)
    ada = steps.join(browser, link, "ada", width, slug=slug)
    ben = steps.join(browser, link, "ben", width, slug=slug)

    steps.start(ada)
    steps.shot(ada, "narratives-order", width)
    rebuild(ada, orders)
    rebuild(ada, orders)
    expect(ada.locator("main")).to_contain_text("All done")
    steps.start(ben)
    rebuild(ben, orders)
    steps.skip(ben)  # one answer and one skip: nobody is left to give the second answer
    expect(ben.locator("main")).to_contain_text("All done")
    skipped = Assignment.objects.get(status=Assignment.Status.SKIPPED).item_stage.item

    # The stranded narrative, finished by hand with the answer it has.
    rescued = steps.rescue_by_hand(
        admin, base, slug, value=AS_ANSWERED, reason="Ada's order will do.", width=width
    )
    assert rescued == skipped.external_id
    skipped.refresh_from_db()
    assert skipped.status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get(item=skipped).by.username == "lead"

    # Data manager: the narrative about the flood by its text, tagged, exported.
    flood = Item.objects.get(project=project, payload__gold__order=orders[0])
    listed, rows, exported = steps.data_manager(
        admin, base, slug, search="flooded", tag="checked", width=width
    )
    assert listed == [flood.external_id]
    assert [row["item id"] for row in rows] == [flood.external_id]
    assert [line["id"] for line in exported] == [flood.external_id]
    assert list(flood.tags.values_list("name", flat=True)) == ["checked"]

    # The release: manifest checksums and row counts, the benchmark's JSON Lines.
    files = steps.publish(admin, base, slug, notes="Pilot day.", width=width)
    [layout] = [name for name in files if name.endswith(".jsonl") and "causalnarratives" in name]
    released = [json.loads(line) for line in files[layout].decode().splitlines()]
    assert sorted(line["nodes"] for line in released) == sorted(orders)
    assert sum(len(line["human_answers"]) for line in released) == 3
    assert Annotation.objects.filter(item_stage__stage=stage).count() == 3
    assert "causalnarratives_scores.csv" in files
    for page in (admin, ada, ben):
        page.context.close()
