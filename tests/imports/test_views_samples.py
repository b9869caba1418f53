"""The Imports page of each workflow (imports.views): the column table and the sample file come
from the workflow's registered schema, the sample file imports cleanly into a project made from
the workflow's template, and a value outside a column's vocabulary is refused with its line,
field, the value and the allowed values, with nothing written."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item, ItemStage, Project
from imports.core import schema_for_kind
from imports.models import ImportBatch
from studio.services import project_from_template
from tests.factories import make_user

pytestmark = pytest.mark.django_db

#: The workflows whose files the Imports page reads row by row (the others link their own page).
ROW_WORKFLOWS = ("causalt5k", "meter", "verify_label", "generic")


@pytest.fixture
def admin(client):
    user = make_user("importer", is_staff=True)
    client.force_login(user)
    return user


def made(workflow: str, user) -> Project:
    return project_from_template(workflow=workflow, slug="p", name="P", creator=user)


def sample(client, project) -> bytes:
    response = client.get(reverse("imports:sample", args=[project.slug]))
    assert response["Content-Disposition"].endswith('-sample.csv"')
    return b"".join(response.streaming_content)


def upload(client, project, content: bytes, name: str = "rows.csv"):
    return client.post(
        reverse("imports:imports", args=[project.slug]),
        {"file": SimpleUploadedFile(name, content), "duplicate_policy": "reject", "layout": "rows"},
    )


@pytest.mark.parametrize("workflow", ROW_WORKFLOWS)
def test_each_workflows_sample_file_imports_cleanly(client, admin, workflow):
    project = made(workflow, admin)
    upload(client, project, sample(client, project))
    batch = ImportBatch.objects.get(project=project)
    assert batch.status == ImportBatch.Status.SUCCEEDED, batch.errors
    assert batch.items_created == 2


def test_the_column_table_shows_each_fields_allowed_values_and_example_from_the_schema(
    client, admin
):
    project = made("causalt5k", admin)
    page = html.unescape(
        client.get(reverse("imports:imports", args=[project.slug])).content.decode()
    )
    for column in schema_for_kind("causalt5k").describe():
        assert f"<code>{column['name']}</code>" in page
        assert f"<code>{column['example']}</code>" in page
        for value in column["allowed"]:
            assert f"<code>{value}</code>" in page
    assert "<code>W10</code>" in page and "<code>S8</code>" in page  # trap_type's vocabulary
    assert "<code>L3</code>" in page and "<code>CONDITIONAL</code>" in page


def test_imported_causalt5k_cases_start_in_review_not_in_the_near_duplicate_queue(client, admin):
    project = made("causalt5k", admin)
    upload(client, project, sample(client, project))
    stages = set(
        ItemStage.objects.filter(item__project=project).values_list("stage__slug", flat=True)
    )
    assert stages == {"review"}
    payload = Item.objects.get(project=project, external_id="T2-W7-MED-001").payload
    assert payload["case_id"] == "T2-W7-MED-001" and payload["tier"] == 2


@pytest.mark.parametrize(
    "workflow, header, row, field, allowed",
    [
        (
            "causalt5k",
            "id,pearl_level,scenario,label,trap_type",
            "c2,L2,A scenario.,NO,W99",
            "trap_type",
            ["W1", "W10", "S8", "F8"],
        ),
        (
            "causalt5k",
            "id,pearl_level,scenario,label",
            "c2,L4,A scenario.,NO",
            "pearl_level",
            ["L1", "L2", "L3"],
        ),
        (
            "causalt5k",
            "id,pearl_level,scenario,label",
            "c2,L2,A scenario.,MAYBE",
            "label",
            ["YES", "NO", "AMBIGUOUS", "VALID", "INVALID", "CONDITIONAL"],
        ),
        (
            "meter",
            "pair_id,source,context,cause,effect",
            "p2,NEWSPAPER,Rain fell so the road flooded.,Rain fell.,The road flooded.",
            "source",
            ["ESL", "MAVEN-ERE", "MECI", "WIKIWHY"],
        ),
    ],
)
def test_a_value_outside_the_vocabulary_is_refused_naming_line_field_and_allowed_values(
    client, admin, workflow, header, row, field, allowed
):
    project = made(workflow, admin)
    good = header.replace("c2", "c1")
    first = {
        "causalt5k": "c1,L2,A scenario.,NO" + (",W7" if "trap_type" in header else ""),
        "meter": "p1,ESL,Rain fell so the road flooded.,Rain fell.,The road flooded.",
    }[workflow]
    content = f"{good}\n{first}\n{row}\n".encode()
    response = upload(client, project, content)
    batch = ImportBatch.objects.get(project=project)
    assert batch.status == ImportBatch.Status.FAILED
    assert not Item.objects.filter(project=project).exists()
    [error] = batch.errors
    assert error["line"] == 3 and error["field"] == field
    bad = row.split(",")[header.split(",").index(field)]
    assert bad in error["message"]
    for value in allowed:
        assert value in error["message"]
    page = html.unescape(
        client.get(reverse("imports:import", args=[project.slug, batch.pk])).content.decode()
    )
    assert bad in page and "3" in page
    assert response.status_code == 302
