"""The graphs plug-in inside the app: the kind (y / n, numbers, refusals), blindness (the
page and the API never carry the answer; the graph is drawn), the graph_record policy, the
Graphs tab with the scores, generation from an upload, the workflow's template and the demo."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import ItemStage, Project, Role
from annotation.workflows import get_workflow
from graphs import services
from graphs.demo import DEMO_EDGE_CSV, DEMO_QUESTIONS, answer_all, intervention_rows
from tests.factories import make_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    project = services.carlgt_project_create(slug="graphs", name="Graphs", overlap=2, seed=1)
    services.dsep_generate(
        project=project, data=DEMO_EDGE_CSV, filename="g.csv", graph_name="demo", limit=6, seed=2
    )
    engine.items_create(project=project, rows=intervention_rows())
    return project


def lease(person, stage):
    access = access_stage_for_annotator(user=person, stage_id=stage.pk)
    return engine.assignment_next(annotator=person, stage=access)


def test_annotators_see_the_question_and_the_graph_never_the_answer(project, client):
    stage = project.stages.get()
    person = make_member(project)
    item = lease(person, stage).item_stage.item
    client.force_login(person)
    page = client.get(reverse("annotation:stage", args=[stage.pk])).content.decode()
    assert item.payload["question"] in page
    if item.payload["answer_type"] == "yes_no":
        assert 'data-key="y"' in page and 'data-key="n"' in page
    assert "<svg" in page and 'class="dag-node dag-pair"' in page
    body = page.split('class="item-body"', 1)[-1]
    for hidden in ('"answer"', "source_file", f">{item.payload['answer']}<"):
        assert hidden not in body
    from tests.api.test_views import client_for

    seen = client_for(make_member(project)).post(f"/api/stages/{stage.pk}/next/").json()
    shown = seen["item"]["payload"]
    assert set(shown) == {"question", "task", "answer_type", "task_label", "graph_svg"}
    assert "answer" not in shown


def test_yes_no_and_numbers_are_validated_and_recorded(project):
    stage = project.stages.get()
    people = [make_member(project) for _ in range(2)]
    early = {}  # numbers the first person answered 1.5 to before reaching a yes/no question
    with pytest.raises(ApplicationError, match="yes or no"):
        assignment = None
        while True:
            assignment = lease(people[0], stage)
            if assignment.item_stage.item.payload["answer_type"] == "yes_no":
                break
            early[assignment.item_stage.item_id] = assignment.item_stage.item.payload["answer"]
            engine.annotation_submit(
                assignment_id=assignment.pk, annotator=people[0], payload={"value": "1.5"}
            )
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=people[0], payload={"value": "maybe"}
        )
    number = ItemStage.objects.filter(stage=stage, item__payload__answer_type="number").first()
    kind_context_item = number.item
    from annotation.kinds import KindContext
    from graphs.kinds import GraphQuestionKind

    context = KindContext(stage=stage, item=kind_context_item)
    assert GraphQuestionKind().validate({"value": " -0,5 "}, context) == {"value": -0.5}
    with pytest.raises(ApplicationError, match="Type a number"):
        GraphQuestionKind().validate({"value": "about two"}, context)

    def right(index, item):
        return {"value": item.payload["answer"]}

    answer_all(stage, people, right)
    resolved = ItemStage.objects.filter(stage=stage, state="resolved")
    assert resolved.count() == 8
    for item_stage in resolved:
        value = item_stage.resolution.value
        if item_stage.item.payload["answer_type"] == "yes_no":
            assert value == 1.0  # the share who answered right
        else:  # the mean absolute error
            truth = item_stage.item.payload["answer"]
            wrong = abs(1.5 - truth) / 2 if item_stage.item_id in early else 0.0
            assert value == pytest.approx(wrong)


def test_the_graphs_tab_scores_answers_per_task_and_size(project, client):
    stage = project.stages.get()
    people = [make_member(project) for _ in range(2)]

    def answer(index, item):
        truth = item.payload["answer"]
        if item.payload["answer_type"] == "number":
            return {"value": truth + 1.0}
        return {"value": "yes" if index == 1 else truth}  # the second always says yes

    answer_all(stage, people, answer)
    rows = {(r["task"], r["graph_size"]): r for r in services.project_scores(project)}
    dsep = rows[("d_separation", "small")]
    truths = [
        p["answer"]
        for p in project.items.filter(payload__task="d_separation").values_list(
            "payload", flat=True
        )
    ]
    yes = truths.count("yes")
    assert dsep["answers"] == 12 and dsep["questions"] == 6
    assert dsep["accuracy"] == pytest.approx((6 + yes) / 12)
    assert dsep["roc_auc"] == 1.0  # yes-questions: share 1; no-questions: share 1/2
    assert rows[("intervention", "small")]["mae"] == pytest.approx(1.0)
    researcher = make_member(project, role=Role.RESEARCHER)
    client.force_login(researcher)
    page = client.get(reverse("graphs:scores", args=[project.slug])).content.decode()
    assert 'id="graph-scores"' in page and "D-separation" in page and "1.000" in page
    assert "Generate questions" not in page  # admins only
    annotator = make_member(project)
    client.force_login(annotator)
    assert client.get(reverse("graphs:scores", args=[project.slug])).status_code in (403, 404)


def test_admins_generate_questions_from_an_upload_and_see_bad_files_explained(project, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    admin = make_member(project, role=Role.ADMIN)
    client.force_login(admin)
    url = reverse("graphs:generate", args=[project.slug])
    edges = json.dumps([["X", "M"], ["M", "Y"], ["X", "Y"]]).encode()
    response = client.post(
        url,
        {"file": SimpleUploadedFile("g.json", edges), "graph_name": "med", "limit": "4"},
    )
    assert response.status_code == 302
    assert project.items.filter(payload__graph_id="med").count() == 4
    bad = SimpleUploadedFile("bad.csv", b"cause,effect\nA,B\nB,A\n")
    response = client.post(url, {"file": bad, "graph_name": "cyc"})
    assert response.status_code == 400 and "not acyclic" in response.content.decode()
    assert not project.items.filter(payload__graph_id="cyc").exists()
    # Files that used to stop the page with a 500: not UTF-8, nested 100,000 deep.
    for name, content, where in [
        ("latin1.csv", b"cause,effect\nA,caf\xe9\n", "line 2, column 6: not UTF-8"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested more than 64 levels deep"),
    ]:
        upload = SimpleUploadedFile(name, content)
        response = client.post(url, {"file": upload, "graph_name": "bad"})
        assert response.status_code == 400 and where in response.content.decode()
    assert not project.items.filter(payload__graph_id="bad").exists()


def test_the_workflow_template_and_the_demo(client):
    workflow = get_workflow(services.WORKFLOW)
    created = workflow.create(slug="fresh", name="Fresh", description="")
    assert created.stages.get().kind == "graph_question"
    # A human baseline: the template's stage is blind to earlier work on an item.
    assert created.stages.get().eligibility == [{"rule": "blind"}]
    from django.contrib.auth import get_user_model

    from annotation.plugins import get_plugin

    users = {
        name: get_user_model().objects.create_user(name, password="x")
        for name in ("admin", "researcher", "annotator1", "annotator2", "annotator3")
    }
    get_plugin("graphs").demo(users=users)
    get_plugin("graphs").demo(users=users)  # again: nothing doubles
    demo = Project.objects.get(slug="carlgt-demo")
    assert demo.items.count() == DEMO_QUESTIONS + 2
    rows = services.project_scores(demo)
    assert {r["task"] for r in rows} == {"d_separation", "intervention"}
    assert lease(users["annotator3"], demo.stages.get()) is not None


def test_the_project_pages_render_for_a_researcher(project, client):
    stage = project.stages.get()
    answer_all(stage, [make_member(project)], lambda index, item: {"value": item.payload["answer"]})
    client.force_login(make_member(project, role=Role.RESEARCHER))
    for url in (
        reverse("annotation:project", args=[project.slug]),
        reverse("agreement:dashboard", args=[project.slug]),
        reverse("agreement:stage", args=[project.slug, stage.slug]),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
    assert (
        "Graphs" in client.get(reverse("annotation:project", args=[project.slug])).content.decode()
    )
