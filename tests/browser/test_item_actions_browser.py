"""Rescuing a stranded item in a real browser: two annotators on a stage that needs two per
item, one skips; the admin follows the Setup tab's warning to the item, sees why it is stuck,
is stopped by the confirmation, then resolves it by hand — and the item goes on."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Item, ItemEvent, Role
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_items, make_member, make_project, make_verify_stage

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def lease(user, stage):
    return services.assignment_next(
        annotator=user, stage=access_stage_for_annotator(user=user, stage_id=stage.pk)
    )


def test_an_admin_rescues_a_stranded_item(live_server, page):
    project = make_project(slug="rescue")
    verify = make_verify_stage(project, overlap=2)
    make_items(project, 1, prefix="pair")
    ann, ben = make_member(project), make_member(project)
    make_member(project, Role.ADMIN, username="boss")
    held = lease(ann, verify)
    services.annotation_submit(assignment_id=held.pk, annotator=ann, payload={"value": "keep"})
    held = lease(ben, verify)
    services.assignment_skip(assignment_id=held.pk, annotator=ben, reason="too blurry")

    base = live_server.url
    sign_in_with_the_keyboard(page, base, "boss")
    page.goto(base + reverse("studio:setup", args=["rescue"]))
    warning = page.locator("#stranded")
    expect(warning).to_contain_text("1 item needs more people than can still take it")
    warning.get_by_role("link", name="pair-00000").click()
    expect(page).to_have_url(re.compile(r"/projects/rescue/items/\d+/$"))
    expect(page.locator("main")).to_contain_text(
        "Stuck: needs 1 more answer; 0 eligible annotators can still take it."
    )
    expect(page.locator("main")).to_contain_text("too blurry")

    page.locator("summary", has_text="Resolve by hand").click()
    page.select_option("#resolve-value", "keep")
    page.fill("#resolve-reason", "One careful reading is enough here.")
    # Without the tick the browser's own check stops the form; remove it to see the server's.
    page.eval_on_selector("input[name=confirm]", "box => box.removeAttribute('required')")
    page.locator("form:has(#resolve-value) button[type=submit]").click()
    error = page.locator("#action-error")
    expect(error).to_contain_text("Tick the box to confirm")
    expect(error).to_be_focused()
    assert Item.objects.get(project=project).status == Item.Status.ACTIVE
    # The refused form comes back open, with what was posted.
    expect(page.locator("#resolve-value")).to_have_value("keep")
    expect(page.locator("#resolve-reason")).to_have_value("One careful reading is enough here.")
    page.check("form:has(#resolve-value) input[name=confirm]")
    page.locator("form:has(#resolve-value) button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"#history$"))
    history = page.locator("#history")
    expect(history).to_contain_text("Resolved by hand")
    expect(history).to_contain_text("One careful reading is enough here.")
    expect(page.locator("main")).not_to_contain_text("Stuck")
    assert Item.objects.get(project=project).status == Item.Status.ACCEPTED
    assert ItemEvent.objects.get().by.username == "boss"
    page.goto(base + reverse("studio:setup", args=["rescue"]))
    expect(page.locator("#stranded")).to_have_count(0)
