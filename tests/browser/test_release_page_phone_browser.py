"""A published release's page on a phone (390 px) does not scroll sideways: the manifest's
long file names (CARL-GT's ``carlgt_<task>_<graph>_questions.txt``) wrap inside the side card,
and a table that still does not fit scrolls in its own region (releases/templates/releases/
release.html, static/css/io.css). The manifest card widened the page to 542 px before."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse

from annotation.models import Item
from graphs.services import carlgt_file_import
from releases import services
from studio.services import project_from_template
from tests.browser.study_day_steps import new_page, sign_in
from tests.browser.test_wide_tables_browser import PAGE_OVERFLOW
from tests.factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

QUESTIONS = (
    b"task,graph_id,question,answer\n"
    b"d_separation,1,Are V1 and V4 d-separated given V2?,yes\n"
    b"intervention,100,What is the expected value of V3 if V1 is set to 1?,2.5\n"
)


def test_a_release_page_fits_a_phone(live_server, browser, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    lead = make_user("lead", is_staff=True)
    project = project_from_template(workflow="carlgt", slug="graphs", name="Graphs", creator=lead)
    carlgt_file_import(project=project, fileobj=io.BytesIO(QUESTIONS), filename="questions.csv")
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    services.release_publish(project=project, user=lead, notes="")
    page = new_page(browser, 390)
    sign_in(page, live_server.url, "lead", PASSWORD)
    page.goto(live_server.url + reverse("releases:release", args=["graphs", 1]))
    page.wait_for_selector(".badge.ok", timeout=60_000)
    assert "carlgt_d_separation_1_questions.txt" in page.locator("aside").inner_text()
    assert page.evaluate(PAGE_OVERFLOW) <= 1
    page.context.close()
