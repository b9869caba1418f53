"""POST /api/projects/<slug>/graphs/dsep/: d-separation questions generated from a DAG through
the REST API (a file or a JSON edge list), with networkx's answers checked by hand on a
collider and a fork; admins only; every bad input a 400 in the API's error format, nothing
added; documented in the OpenAPI schema."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import Item, Role
from graphs import services
from graphs.demo import DEMO_EDGE_CSV
from tests.api.test_views import client_for
from tests.factories import make_member

pytestmark = pytest.mark.django_db
URL = "/api/projects/{}/graphs/dsep/"


@pytest.fixture
def project():
    return services.carlgt_project_create(slug="graphs-api", name="Graphs API", overlap=2)


def test_a_json_edge_list_adds_questions_with_hand_checked_answers(project):
    admin = client_for(make_member(project, Role.ADMIN))
    # A → C ← B (collider at C), C → D; E → A, E → B (a fork at E)
    body = {
        "graph_name": "collider",
        "edges": [["A", "C"], ["B", "C"], ["C", "D"], ["E", "A"], ["E", "B"]],
        "max_given": 2,
        "limit": 5000,
    }
    response = admin.post(URL.format(project.slug), body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["graph_name"] == "collider" and data["created"] == len(data["external_ids"])
    items = {
        (item.payload["x"], item.payload["y"], tuple(item.payload["given"])): item.payload["answer"]
        for item in Item.objects.filter(project=project, external_id__in=data["external_ids"])
    }

    def asked(x, y, given=()):
        return items.get((x, y, tuple(given))) or items.get((y, x, tuple(given)))

    assert asked("A", "B") == "no"  # open through the fork E
    assert asked("A", "B", ["E"]) == "yes"  # fork blocked
    assert asked("A", "B", ["C", "E"]) == "no"  # the collider C conditioned on opens it
    assert asked("A", "B", ["D", "E"]) == "no"  # so does its descendant D
    assert asked("E", "D", ["C"]) == "yes"  # the chain through C blocked


def test_a_file_upload_works_like_the_graphs_tab(project):
    admin = client_for(make_member(project, Role.ADMIN))
    upload = SimpleUploadedFile("g.csv", DEMO_EDGE_CSV.encode(), content_type="text/csv")
    response = admin.post(
        URL.format(project.slug),
        {"graph_name": "demo", "file": upload, "limit": "6", "seed": "3"},
        format="multipart",
    )
    assert response.status_code == 201
    assert response.json()["external_ids"] == [f"gen-demo-{n}" for n in range(1, 7)]
    assert Item.objects.filter(project=project).count() == 6


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"graph_name": "g", "edges": [["A", "B"], ["B", "A"]]}, "edges"),  # a cycle
        ({"graph_name": "g", "edges": [["A", "A"]]}, "edges"),  # a self-loop
        ({"graph_name": "g", "edges": [["A"]]}, "edges"),  # not a pair
        ({"graph_name": "bad name", "edges": [["A", "B"]]}, "graph_name"),
        ({"graph_name": "g"}, "edges"),  # no edge list
        ({"graph_name": "g", "edges": [["A", "B"]], "max_given": 9}, "max_given"),
        ({"graph_name": "g", "edges": [["A", "B"]], "limit": 0}, "limit"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_added(project, body, field):
    admin = client_for(make_member(project, Role.ADMIN))
    response = admin.post(URL.format(project.slug), body, format="json")
    assert response.status_code == 400, response.content
    error = response.json()
    assert error["message"] and field in error["extra"]
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("filename", "content", "where"),
    [
        ("g.csv", b"cause,effect\nA,B\nB,caf\xe9\n", "line 3, column 6: not UTF-8 (byte 0xE9"),
        ("g.json", b"[" * 100_000 + b"]" * 100_000, "line 1, column 65: nested more than 64"),
        ("g.json", b'[["A", "B\\u0000"]]', "[0][1] holds a NUL character"),
    ],
)
def test_an_unreadable_file_is_a_400_naming_where_and_nothing_is_added(
    project, filename, content, where
):
    admin = client_for(make_member(project, Role.ADMIN))
    upload = SimpleUploadedFile(filename, content)
    response = admin.post(
        URL.format(project.slug), {"graph_name": "g", "file": upload}, format="multipart"
    )
    assert response.status_code == 400, response.content[:300]
    error = response.json()
    assert where in error["message"] and error["extra"]["edges"]
    assert not Item.objects.filter(project=project).exists()


def test_a_json_body_nested_too_deep_is_a_400(project):
    admin = client_for(make_member(project, Role.ADMIN))
    body = '{"graph_name": "g", "edges": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = admin.post(URL.format(project.slug), body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested more than 64 levels" in response.json()["message"]
    assert not Item.objects.filter(project=project).exists()


def test_only_admins_of_a_carlgt_project_generate(project):
    body = {"graph_name": "g", "edges": [["A", "B"], ["B", "C"]]}
    annotator = client_for(make_member(project, Role.ANNOTATOR))
    assert annotator.post(URL.format(project.slug), body, format="json").status_code == 403
    from tests.factories import make_project

    other = make_project()
    admin = client_for(make_member(other, Role.ADMIN))
    response = admin.post(URL.format(other.slug), body, format="json")
    assert response.status_code == 400 and "not a CARL-GT project" in response.json()["message"]
    assert not Item.objects.exists()


def test_the_schema_documents_the_endpoint():
    from tests.api.test_schema import openapi

    operation = openapi()["paths"]["/api/projects/{slug}/graphs/dsep/"]["post"]
    assert "201" in operation["responses"] and "400" in operation["responses"]
    assert {"multipart/form-data", "application/json"} <= set(operation["requestBody"]["content"])
