"""Setting a study up in a real browser, as a first-time admin would: a project from a
template, a stage, an invite link, an import — and the invited person, with a new account,
annotates the first item with the keyboard."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from annotation.models import Annotation, Project
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_template_stage_invite_import_and_a_first_item_by_the_invited_person(
    live_server, browser, tmp_path
):
    base = live_server.url
    make_user("boss", is_staff=True)
    admin = browser.new_context(viewport={"width": 1366, "height": 850}).new_page()
    sign_in_with_the_keyboard(admin, base, "boss")
    admin.click("text=New project")
    admin.check("input[value=generic]")
    admin.fill("#id_name", "Pilot study")
    admin.fill("#id_slug", "pilot")
    admin.click("button:has-text('Create the project')")
    expect(admin).to_have_url(re.compile(r"/projects/pilot/setup/$"))

    admin.fill("#new-slug", "verify")
    admin.fill("#new-name", "Verify sentences")
    admin.select_option("#new-kind", "verify")
    admin.fill("#new-overlap", "1")
    admin.click("button:has-text('Add the stage')")
    expect(admin.locator(".studio-stage > summary")).to_contain_text("Verify sentences")

    admin.select_option("#invite-role", "annotator")
    admin.click("button:has-text('Create a link')")
    link = admin.locator("#invites input[readonly]").first.input_value()
    assert "/join/" in link

    items = tmp_path / "items.csv"
    items.write_text("id,text\ns1,The dam broke and the valley flooded.\ns2,It rained.\n")
    admin.goto(base + reverse("imports:imports", args=["pilot"]))
    admin.set_input_files("#id_file", str(items))
    admin.click("button:has-text('Check and import')")
    expect(admin.locator("main")).to_contain_text("succeeded", ignore_case=True)

    newcomer = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    newcomer.goto(link)
    newcomer.fill("#id_username", "newcomer")
    newcomer.fill("#id_password1", "a-long-pass-9!")
    newcomer.fill("#id_password2", "a-long-pass-9!")
    newcomer.click("button:has-text('Create my account and join')")
    expect(newcomer).to_have_url(re.compile(r"/projects/pilot/$"))
    newcomer.click("text=Start")
    expect(newcomer.locator("[data-start]")).to_be_focused()
    newcomer.keyboard.press("Enter")  # the focused Start button
    newcomer.wait_for_selector(".item-form")
    newcomer.wait_for_selector("#annotate[data-ready]", state="attached")  # keys are wired up
    newcomer.keyboard.press("k")
    expect(newcomer.locator("#progress-line")).to_contain_text("1 done")
    project = Project.objects.get(slug="pilot")
    annotation = Annotation.objects.get(item_stage__stage__project=project)
    assert annotation.annotator.username == "newcomer" and annotation.payload["value"] == "keep"


def test_a_stage_is_edited_with_the_form_and_its_guidelines_previewed_live(live_server, browser):
    """Template → Setup → a stage's form: overlap, a route per outcome (the reason field shows
    only for discard), guidelines previewed as typed (the item screen's rendering) → a refused
    save puts the error beside the field and keeps the rest → saved."""
    from annotation.models import Stage

    base = live_server.url
    make_user("boss", is_staff=True)
    admin = browser.new_context(viewport={"width": 1366, "height": 850}).new_page()
    admin.set_default_timeout(10_000)
    sign_in_with_the_keyboard(admin, base, "boss")
    admin.goto(base + reverse("studio:new"))
    admin.check("input[value=meter]")
    admin.fill("#id_name", "Pairs study")
    admin.fill("#id_slug", "pairs")
    admin.click("button:has-text('Create the project')")
    expect(admin).to_have_url(re.compile(r"/projects/pairs/setup/$"))
    stage = Stage.objects.get(project__slug="pairs", slug="verify")
    pk, template_guidelines = stage.pk, stage.instructions

    admin.locator(f"#stage-{pk} > summary").focus()
    admin.keyboard.press("Enter")  # opens the stage's form
    overlap = admin.locator(f"#overlap-{pk}")
    expect(overlap).to_be_visible()
    overlap.fill("0")
    reject = admin.locator(f"#stage-{pk} select[name=route-reject]")
    reason = admin.locator(f"#stage-{pk} input[name=route-reject-reason]")
    reject.select_option("discard")
    expect(reason).to_be_visible()
    reason.fill("not a causal pair")
    # Another policy: its parameters (ties) come in, the typed route stays.
    expect(admin.locator(f"#tie-{pk}")).to_have_count(0)
    admin.select_option(f"#policy-{pk}", "majority")
    expect(admin.locator(f"#tie-{pk}")).to_be_visible()
    expect(admin.locator(f"#stage-{pk} input[name=route-reject-reason]")).to_have_value(
        "not a causal pair"
    )
    guidelines = admin.locator(f"#instructions-{pk}")
    guidelines.fill("")
    guidelines.press_sequentially("Keep **causal** pairs only.", delay=5)
    preview = admin.locator(f"#preview-{pk}")
    expect(preview.locator("strong")).to_have_text("causal")
    admin.click(f"#stage-{pk} button:has-text('Save')")

    # Refused: the stage's error takes the focus (read out first), the field's own message
    # sits beside it, and what was typed is still there.
    expect(admin.locator(f"#stage-{pk} [data-stage-error]")).to_be_focused()
    expect(admin.locator(f"#overlap-{pk}-error")).to_be_visible()
    expect(admin.locator(f"#overlap-{pk}")).to_have_attribute("aria-invalid", "true")
    expect(admin.locator(f"#stage-{pk} input[name=route-reject-reason]")).to_have_value(
        "not a causal pair"
    )
    expect(admin.locator(f"#preview-{pk} strong")).to_have_text("causal")
    stage.refresh_from_db()
    assert stage.overlap != 0 and stage.instructions == template_guidelines

    admin.fill(f"#overlap-{pk}", "2")
    admin.locator(f"#stage-{pk} select[name=route-reject]").select_option("escalate")
    expect(admin.locator(f"#stage-{pk} input[name=route-reject-reason]")).to_be_hidden()
    admin.locator(f"#stage-{pk} button:has-text('Save')").focus()
    admin.keyboard.press("Enter")
    expect(admin.locator("main")).to_contain_text("Stage saved")
    stage.refresh_from_db()
    assert stage.overlap == 2 and stage.resolution_policy == "majority"
    assert stage.routes["reject"] == {"action": "escalate"}
    assert stage.instructions == "Keep **causal** pairs only."
