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
    expect(admin.locator(".studio-stage summary")).to_contain_text("Verify sentences")

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
