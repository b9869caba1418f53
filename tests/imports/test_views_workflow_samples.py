"""The workflows' own import pages (ratings' pairs and ratings, CARL-GT's questions,
CausalNarratives' lines) show their registered schema's column table (the io_ui tag
``import_columns``) and offer its sample file (``imports.views.schema_sample``): the sample
downloaded from the page imports cleanly through that page into a project made from the
workflow's template."""

from __future__ import annotations

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Annotation, Item, Project, Role
from imports.core import schema_for_kind
from imports.core.schema import SCHEMAS
from studio.services import project_from_template
from tests.factories import make_member, make_user

pytestmark = pytest.mark.django_db

#: (workflow, the page's URL name, the form's extra fields, schema, sample format).
PAGES = [
    ("ratings", "ratings:import", {"what": "pairs"}, "ratings.pairs", "csv"),
    ("ratings", "ratings:import", {"what": "pairs"}, "ratings.pairs", "jsonl"),
    ("carlgt", "graphs:import", {}, "graphs.carlgt_question", "csv"),
    ("carlgt", "graphs:import", {}, "graphs.carlgt_question", "jsonl"),
    ("causal_narratives", "narratives:import", {}, "narratives.narrative", "jsonl"),
]


@pytest.fixture
def admin(client):
    user = make_user("importer", is_staff=True)
    client.force_login(user)
    return user


def made(workflow: str, user) -> Project:
    return project_from_template(workflow=workflow, slug="p", name="P", creator=user)


def sample(client, project, schema: str, fmt: str) -> bytes:
    response = client.get(reverse("imports:schema_sample", args=[project.slug, schema, fmt]))
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith(f'-sample.{fmt}"')
    return b"".join(response.streaming_content if response.streaming else [response.content])


def page_text(client, url: str) -> str:
    return html.unescape(client.get(url).content.decode())


@pytest.mark.parametrize("workflow, url_name, extra, schema, fmt", PAGES)
def test_each_pages_sample_file_imports_cleanly_through_the_page(
    client, admin, workflow, url_name, extra, schema, fmt
):
    project = made(workflow, admin)
    url = reverse(url_name, args=[project.slug])
    link = reverse("imports:schema_sample", args=[project.slug, schema, fmt])
    assert f'href="{link}"' in page_text(client, url)
    content = sample(client, project, schema, fmt)
    response = client.post(url, {"file": SimpleUploadedFile(f"s.{fmt}", content), **extra})
    assert response.status_code == 302, html.unescape(response.content.decode())[-3000:]
    assert Item.objects.filter(project=project).exists()


def test_the_ratings_sample_rates_the_pairs_sample(client, admin):
    project = made("ratings", admin)
    url = reverse("ratings:import", args=[project.slug])
    pairs = sample(client, project, "ratings.pairs", "csv")
    client.post(url, {"file": SimpleUploadedFile("p.csv", pairs), "what": "pairs"})
    ratings = sample(client, project, "ratings.ratings", "csv")
    response = client.post(url, {"file": SimpleUploadedFile("r.csv", ratings), "what": "ratings"})
    assert response.status_code == 302
    stored = Annotation.objects.filter(item_stage__item__project=project)
    assert sorted(answer.payload["value"] for answer in stored) == [3, 8]


@pytest.mark.parametrize(
    "workflow, url_name, schema",
    [
        ("ratings", "ratings:import", "ratings.pairs"),
        ("ratings", "ratings:import", "ratings.ratings"),
        ("carlgt", "graphs:import", "graphs.carlgt_question"),
        ("causal_narratives", "narratives:import", "narratives.narrative"),
    ],
)
def test_the_column_table_shows_each_fields_allowed_values_and_example(
    client, admin, workflow, url_name, schema
):
    project = made(workflow, admin)
    page = page_text(client, reverse(url_name, args=[project.slug]))
    for column in SCHEMAS[schema].describe():
        assert f"<code>{column['name']}</code>" in page
        if column["example"]:
            assert f"<code>{column['example']}</code>" in page
        for value in column["allowed"]:
            assert f"<code>{value}</code>" in page


def test_a_narratives_sample_line_is_a_chain_with_json_lists():
    [first, second] = SCHEMAS["narratives.narrative"].sample_rows(2)
    assert set(first) == {"nodes", "sentences"}  # no edges: a chain, not a graph
    assert len(first["sentences"]) == len(first["nodes"]) - 1
    column = {c["name"]: c for c in SCHEMAS["narratives.narrative"].describe()}
    assert json.loads(column["nodes"]["example"]) == first["nodes"]
    assert column["direction"]["allowed"] == ["forward", "reverse"]


def test_an_unknown_schema_or_format_is_not_found_and_annotators_get_no_sample(client, admin):
    project = made("carlgt", admin)
    for schema, fmt in [("nothing.here", "csv"), ("graphs.carlgt_question", "xlsx")]:
        url = reverse("imports:schema_sample", args=[project.slug, schema, fmt])
        assert client.get(url).status_code == 404
    client.force_login(make_member(project, role=Role.ANNOTATOR, username="ann"))
    url = reverse("imports:schema_sample", args=[project.slug, "graphs.carlgt_question", "csv"])
    assert client.get(url).status_code in (403, 404)


def test_the_generic_imports_page_links_each_workflows_own_page(client, admin):
    for workflow, url_name in [
        ("ratings", "ratings:import"),
        ("carlgt", "graphs:import"),
        ("causal_narratives", "narratives:import"),
    ]:
        project = project_from_template(
            workflow=workflow, slug=f"w-{workflow}".replace("_", "-"), name=workflow, creator=admin
        )
        page = page_text(client, reverse("imports:imports", args=[project.slug]))
        own = reverse(url_name, args=[project.slug])
        assert f'href="{own}"' in page
        assert client.get(own).status_code == 200
    assert schema_for_kind("carlgt").name == "generic"
