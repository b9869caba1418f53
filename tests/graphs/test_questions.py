"""The Graphs tab's per-question view (graphs/questions.py, graphs.views.questions / question)
and its figures (graphs/plots.py): final answers per question, hardest first, one question with
its graph and answers; researchers and admins only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Role
from graphs import plots, services
from graphs.demo import DEMO_EDGE_CSV, answer_all, intervention_rows
from graphs.questions import question_detail, question_rows
from tests.factories import make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered():
    from annotation import services as engine

    project = services.carlgt_project_create(slug="graphs-q", name="Graphs", overlap=2, seed=1)
    services.dsep_generate(
        project=project, data=DEMO_EDGE_CSV, filename="g.csv", graph_name="demo", limit=6, seed=2
    )
    engine.items_create(project=project, rows=intervention_rows())
    stage = project.stages.get()
    people = [make_member(project) for _ in range(2)]

    def answer(index, item):
        truth = item.payload["answer"]
        if item.payload["answer_type"] == "number":
            return {"value": truth + 2.0 * index}
        return {"value": "yes" if index == 1 else truth}  # the second always says yes

    answer_all(stage, people, answer)
    return project


def test_questions_come_hardest_first_with_their_final_answers(answered):
    rows = question_rows(answered)
    yes_no = [row for row in rows if not row.is_number]
    numbers = [row for row in rows if row.is_number]
    assert rows[: len(yes_no)] == yes_no  # yes / no first, then numbers
    shares = [row.share_correct for row in yes_no]
    assert shares == sorted(shares)
    assert {row.share_correct for row in yes_no} == {0.5, 1.0}  # a "no" question: 1 of 2 right
    for row in yes_no:
        assert row.n_answers == 2 and row.yes + row.no == 2
        assert row.share_correct == (1.0 if row.expected == "yes" else 0.5)
    assert all(row.mean_absolute_error == pytest.approx(1.0) for row in numbers)
    only = question_rows(answered, task="intervention")
    assert only and all(row.task == "intervention" for row in only)


def test_figures_are_svg_and_the_same_answers_give_the_same_bytes(answered):
    rows = question_rows(answered)
    for draw in (plots.accuracy_svg, plots.difficulty_svg):
        first, second = draw(rows), draw(rows)
        assert first.lstrip().startswith("<?xml") and "<svg" in first
        assert first == second
    assert plots.accuracy_svg([]) == plots.difficulty_svg([])  # the same "nothing final" note


def test_the_pages_show_researchers_each_question_and_refuse_annotators(answered, client):
    researcher = make_member(answered, role=Role.RESEARCHER)
    client.force_login(researcher)
    scores = client.get(reverse("graphs:scores", args=[answered.slug])).content.decode()
    assert "Figure 1." in scores and "Figure 2." in scores
    assert reverse("graphs:questions", args=[answered.slug]) in scores
    listing = client.get(
        reverse("graphs:questions", args=[answered.slug]), {"task": "intervention"}
    )
    assert listing.status_code == 200
    rows = question_rows(answered, task="intervention")
    html = listing.content.decode()
    assert reverse("graphs:question", args=[answered.slug, rows[0].item_id]) in html
    row, svg = question_detail(answered, rows[0].item_id)
    detail = client.get(reverse("graphs:question", args=[answered.slug, row.item_id]))
    assert detail.status_code == 200 and row.question in detail.content.decode()
    dsep = next(r for r in question_rows(answered) if not r.is_number)
    page = client.get(reverse("graphs:question", args=[answered.slug, dsep.item_id])).content
    assert b"<svg" in page  # the graph, drawn
    assert client.get(reverse("graphs:question", args=[answered.slug, 10**8])).status_code == 404
    annotator = make_member(answered)
    client.force_login(annotator)
    for url in (
        reverse("graphs:questions", args=[answered.slug]),
        reverse("graphs:question", args=[answered.slug, row.item_id]),
    ):
        assert client.get(url).status_code in (403, 404)
