"""CARL-GT questions imported in the browser (graphs/carlgt.py ``QUESTION_SCHEMA``, through
``graphs:import`` and ``graphs.services.carlgt_file_import``): the benchmark's vocabulary — its
five tasks, yes / no answers for three of them and numbers for two — is checked row by row; a
file with any problem is refused naming file, line, field and what to fix, with nothing
written; a clean file becomes the same items as the benchmark's own import."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item, ItemStage, Role
from graphs.carlgt import TASKS
from graphs.services import carlgt_project_create
from tests.factories import make_member

pytestmark = pytest.mark.django_db

HEADER = "task,graph_id,question,answer\n"
GOOD = "d_separation,1,Are V1 and V2 d-separated?,yes\n"


@pytest.fixture
def project(client):
    project = carlgt_project_create(slug="carl", name="CARL")
    client.force_login(make_member(project, role=Role.ADMIN, username="carl-admin"))
    return project


def upload(client, project, text: str, name: str = "questions.csv"):
    response = client.post(
        reverse("graphs:import", args=[project.slug]),
        {"file": SimpleUploadedFile(name, text.encode())},
    )
    return response, html.unescape(response.content.decode())


@pytest.mark.parametrize(
    "row, expected",
    [
        (
            "causal_discovery,1,Is V1 a cause?,yes",
            ['questions.csv:3: Field "task" must be one of', *TASKS],
        ),
        (
            "conditional_independence,2,Is V1 independent of V3?,maybe",
            [
                "questions.csv:3: answer: a conditional independence question is answered yes "
                "or no, not 'maybe'"
            ],
        ),
        (
            "counterfactual,101,What would V2 be?,yes",
            ["questions.csv:3: answer: a counterfactual question is answered with a number"],
        ),
        ("intervention,1,,2.5", ["questions.csv:3: question: empty question"]),
        (
            "d_separation,large,Is V1 d-separated?,no",
            ['questions.csv:3: Field "graph_id" must be a whole number'],
        ),
    ],
)
def test_a_row_outside_the_vocabulary_is_refused_with_line_field_and_fix(
    client, project, row, expected
):
    if row.startswith("intervention,1,,"):
        expected = ['questions.csv:3: The required field "question" is missing']
    response, page = upload(client, project, HEADER + GOOD + row + "\n")
    assert response.status_code == 400
    assert "nothing was imported" in page
    for words in expected:
        assert words in page, page[page.find("import-error") : page.find("import-error") + 1500]
    assert not Item.objects.filter(project=project).exists()


def test_an_unknown_column_and_a_question_given_twice_are_refused(client, project):
    response, page = upload(
        client, project, "task,graph_id,question,answer,hint\n" + GOOD.strip() + ",look\n"
    )
    assert (
        response.status_code == 400 and 'questions.csv:2: The field "hint" is not part of' in page
    )
    twice = "task,graph_id,question,answer,line\n" + GOOD.strip() + ",5\n" + GOOD.strip() + ",5\n"
    response, page = upload(client, project, twice)
    assert response.status_code == 400
    assert "questions.csv:3: line: question carlgt-d_separation-1-5 is also on line 2" in page
    assert not Item.objects.filter(project=project).exists()


def test_a_clean_file_becomes_the_benchmark_imports_items_in_the_answer_stage(client, project):
    text = (
        "task,graph_id,question,answer,line\n"
        "d_separation,1,Are V1 and V2 d-separated?,YES,7\n"
        "intervention,104,What is E[V3 | do(V1=1)]?,2.5,\n"
    )
    response, _ = upload(client, project, text)
    assert response.status_code == 302
    dsep = Item.objects.get(project=project, external_id="carlgt-d_separation-1-7")
    assert dsep.payload["answer"] == "yes" and dsep.payload["graph_size"] == "large"
    assert dsep.payload["answer_type"] == "yes_no" and dsep.payload["source_line"] == 7
    number = Item.objects.get(project=project, external_id="carlgt-intervention-104-3")
    assert number.payload["answer"] == 2.5 and number.payload["graph_size"] == "small"
    assert set(
        ItemStage.objects.filter(item__project=project).values_list("stage__slug", flat=True)
    ) == {"answer"}
    # The same file again: refused as already imported, nothing doubled.
    response, page = upload(client, project, text)
    assert response.status_code == 400
    assert Item.objects.filter(project=project).count() == 2


def test_json_lines_are_read_too_and_an_empty_file_says_so(client, project):
    line = '{"task": "causal_direction", "graph_id": 3, "question": "Does V1 cause V2?", "answer": "yes"}\n'
    response, _ = upload(client, project, line, name="q.jsonl")
    assert response.status_code == 302
    response, page = upload(client, project, "", name="q.jsonl")
    assert response.status_code == 400


def test_annotators_cannot_import(client, project):
    client.force_login(make_member(project, role=Role.ANNOTATOR, username="ann"))
    response, _ = upload(client, project, HEADER + GOOD)
    assert response.status_code in (403, 404)
    assert not Item.objects.filter(project=project).exists()
