"""The interop page and the Label Studio download: only the project's admins reach them (every
URL as every role); an upload imports and says what it wrote; a bad export imports nothing and
lists its problems at the top of the form."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Annotation, Item, Role
from interop.demo import demo_export
from tests.factories import PASSWORD, make_label_stage, make_member, make_project
from tests.interop.test_potato import fixture_files

pytestmark = pytest.mark.django_db

ROLES = ["anonymous", "non_member", "annotator", "reviewer", "researcher", "admin", "superuser"]
CHOICES = ("causal", "temporal", "unrelated")


@pytest.fixture
def world():
    project = make_project(slug="interop")
    make_label_stage(project, choices=CHOICES)
    earlier = make_label_stage(
        project, slug="earlier", name="Earlier labels", choices=CHOICES, is_active=False
    )
    users = {
        "non_member": make_member(make_project(slug="elsewhere"), Role.ADMIN),
        "annotator": make_member(project, Role.ANNOTATOR),
        "reviewer": make_member(project, Role.REVIEWER),
        "researcher": make_member(project, Role.RESEARCHER),
        "admin": make_member(project, Role.ADMIN),
        "superuser": get_user_model().objects.create_superuser("root", password=PASSWORD),
    }
    return {"project": project, "earlier": earlier, "users": users}


def sign_in(client, world, role):
    if role != "anonymous":
        assert client.login(username=world["users"][role].username, password=PASSWORD)
    return client


#: Status per URL, in ROLES order (a superuser holds every role, as on the Imports page).
EXPECTED = {
    "interop:import": [302, 404, 403, 403, 403, 200, 200],
    "interop:label_studio_export": [302, 404, 403, 403, 403, 200, 200],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("role", ROLES)
def test_only_the_projects_admins_reach_the_pages(client, world, name, role):
    url = reverse(name, args=[world["project"].slug])
    response = sign_in(client, world, role).get(url)
    assert response.status_code == EXPECTED[name][ROLES.index(role)]


def test_an_upload_imports_and_says_what_it_wrote(client, world):
    sign_in(client, world, "admin")
    url = reverse("interop:import", args=["interop"])
    assert url.encode() in client.get(reverse("imports:imports", args=["interop"])).content
    page = client.get(url)
    assert "Earlier labels · label".encode() in page.content
    assert b"Label the relation" not in page.content  # active stages are not offered
    upload = SimpleUploadedFile("project-1.json", json.dumps(demo_export()).encode())
    response = client.post(
        url,
        {"tool": "label_studio", "stage": world["earlier"].pk, "field": "", "file": upload},
        follow=True,
    )
    assert response.status_code == 200
    assert b"Imported 23 answers to relation by 3 raters on 8 tasks" in response.content
    assert b"predictions (2)" in response.content
    assert Annotation.objects.filter(item_stage__stage=world["earlier"]).count() == 23


def test_a_bad_export_lists_its_problems_at_the_top_of_the_form(client, world):
    sign_in(client, world, "admin")
    tasks = demo_export()
    tasks[2]["annotations"][0]["result"][0]["value"]["choices"] = ["sarcastic"]
    upload = SimpleUploadedFile("project-1.json", json.dumps(tasks).encode())
    response = client.post(
        reverse("interop:import", args=["interop"]),
        {"tool": "label_studio", "stage": world["earlier"].pk, "file": upload},
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert text.index('data-testid="import-error"') < text.index('enctype="multipart/form-data"')
    assert "project-1.json, task 3, annotations[0].result[0]: relation: Choose" in text
    assert Item.objects.filter(project=world["project"]).count() == 0


def test_a_zipped_potato_folder_is_uploaded_with_its_field(client, world):
    stage = make_label_stage(
        world["project"],
        slug="relation",
        name="Relation",
        choices=("causal", "not_causal"),
        is_active=False,
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in fixture_files().items():
            archive.writestr(f"my-task/{name}", content)
    sign_in(client, world, "admin")
    response = client.post(
        reverse("interop:import", args=["interop"]),
        {
            "tool": "potato",
            "stage": stage.pk,
            "field": "relation",
            "file": SimpleUploadedFile("my-task.zip", buffer.getvalue()),
        },
        follow=True,
    )
    assert b"Imported 12 answers to relation by 3 raters on 4 tasks" in response.content


def test_the_download_is_label_studio_tasks(client, world):
    sign_in(client, world, "admin")
    client.post(
        reverse("interop:import", args=["interop"]),
        {
            "tool": "label_studio",
            "stage": world["earlier"].pk,
            "file": SimpleUploadedFile("a.json", json.dumps(demo_export()).encode()),
        },
    )
    response = client.get(reverse("interop:label_studio_export", args=["interop"]))
    assert response["Content-Disposition"] == 'attachment; filename="interop-label-studio.json"'
    tasks = json.loads(b"".join(response.streaming_content))
    assert [task["meta"]["rungwise_external_id"] for task in tasks] == [str(n) for n in range(1, 9)]
