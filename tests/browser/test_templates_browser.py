"""A CausalT5k project set up in the browser alone: New project from its template, then its
Imports page — the sample file downloaded and uploaded as it is — and the cases waiting in the
adversarial review stage (studio.views.project_new, imports.views)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import ItemStage, Project
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_staff_create_a_causalt5k_project_from_its_template_and_import_its_sample(
    live_server, page, tmp_path
):
    make_user("lead", is_staff=True)
    base = live_server.url
    sign_in_with_the_keyboard(page, base, "lead")
    page.goto(base + reverse("studio:new"))
    page.get_by_label("Causal cases across three rungs (CausalT5k-style)").check()
    page.get_by_label("Name", exact=True).fill("Causal cases, pilot")
    page.get_by_label("Short name (in addresses)").fill("ct5k-pilot")
    page.get_by_role("button", name="Create the project").click()
    page.wait_for_url(base + reverse("studio:setup", args=["ct5k-pilot"]))
    project = Project.objects.get(slug="ct5k-pilot")
    assert project.kind == "causalt5k"
    assert page.get_by_role("link", name="CausalT5k").count() >= 1  # its tab

    page.goto(base + reverse("imports:imports", args=["ct5k-pilot"]))
    table = page.locator("table.io-columns")
    assert "trap_type" in table.inner_text() and "W10" in table.inner_text()
    with page.expect_download() as download:
        page.get_by_role("link", name="Download a sample file (CSV)").click()
    sample = tmp_path / "sample.csv"
    download.value.save_as(sample)
    page.set_input_files("#id_file", str(sample))
    page.get_by_role("button", name="Check and import").click()
    page.wait_for_url(f"{base}/projects/ct5k-pilot/imports/*/")
    page.wait_for_selector("text=2 new items")
    waiting = ItemStage.objects.filter(item__project=project).values_list("stage__slug", flat=True)
    assert sorted(waiting) == ["review", "review"]
