"""CARL-GT questions in a real browser, with the keyboard only: y / n answer a d-separation
question at one key press, a number is typed and sent with Enter; the page shows the graph and
never the answer."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.models import Annotation
from graphs import services
from graphs.demo import DEMO_EDGE_CSV, intervention_rows
from tests.browser.test_annotator_flow import sign_in_with_the_keyboard
from tests.browser.test_meter_browser import press
from tests.factories import make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_graph_questions_are_answered_with_the_keyboard(live_server, page):
    project = services.carlgt_project_create(slug="carlgt-b", name="CARL-GT", overlap=1, seed=2)
    services.dsep_generate(
        project=project, data=DEMO_EDGE_CSV, filename="g.csv", graph_name="demo", limit=3, seed=1
    )
    engine.items_create(project=project, rows=intervention_rows()[:1])
    truth = {item.payload["question"]: item.payload for item in project.items.all()}
    person = make_member(project, username="gina")
    stage = project.stages.get()
    base = live_server.url
    page.set_default_timeout(10_000)
    sign_in_with_the_keyboard(page, base, person.username)
    page.goto(base + reverse("annotation:stage", args=[stage.pk]))
    page.keyboard.press("Enter")
    page.wait_for_selector(".item-form")
    for _ in range(4):
        question = page.locator("[data-field=question]").inner_text().strip()
        payload = truth[question]
        assert page.locator("svg.dag .dag-pair").count() == 2
        if payload["answer_type"] == "number":
            field = page.locator("input[name=value]")
            assert field.evaluate("element => element === document.activeElement")
            page.keyboard.type(str(payload["answer"]))
            press(page, "Enter")
        else:
            press(page, "y" if payload["answer"] == "yes" else "n")
    given = {
        a.item_stage.item.payload["question"]: a.payload["value"]
        for a in Annotation.objects.filter(annotator=person).select_related("item_stage__item")
    }
    assert given == {question: payload["answer"] for question, payload in truth.items()}
    rows = services.project_scores(project)
    assert [row["accuracy"] for row in rows if row["task"] == "d_separation"] == [1.0]
