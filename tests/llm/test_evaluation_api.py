"""The evaluations in the REST API (api/views/llm.py): researchers read, admins start and
control; an evaluation's figures beside the human baseline; errors in the API's format."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Role
from llm.models import Evaluation
from tests.factories import make_member
from tests.llm.test_evaluation_services import endpoint, release  # noqa: F401 -- fixtures

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_admin_starts_an_evaluation_and_a_researcher_reads_its_figures(
    release,  # noqa: F811
    endpoint,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    project = release.project
    admin = client_for(make_member(project, Role.ADMIN))
    researcher = client_for(make_member(project, Role.RESEARCHER))
    url = f"/api/projects/{project.slug}/evaluations/"
    body = {"release": 1, "endpoint": endpoint.name}
    assert researcher.post(url, body, format="json").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        started = admin.post(url, body, format="json")
    assert started.status_code == 202, started.json()
    assert started.json()["status"] == "queued"
    listed = researcher.get(url).json()
    assert [row["id"] for row in listed] == [started.json()["id"]]
    assert listed[0]["status"] == "done" and listed[0]["answered"] == 5
    detail = researcher.get(f"{url}{started.json()['id']}/").json()
    accuracy = next(r for r in detail["table"] if (r["group"], r["metric"]) == ("all", "accuracy"))
    assert accuracy["model"] == pytest.approx(2 / 3) and accuracy["human"] == 0.5
    assert accuracy["model_low"] < accuracy["model"] < accuracy["model_high"]
    # pausing is the admins': a researcher is refused before anything is looked at
    assert researcher.post(f"{url}{started.json()['id']}/pause/").status_code == 403
    # a finished evaluation cannot be paused: 409 in the API's format
    paused = admin.post(f"{url}{started.json()['id']}/pause/")
    assert paused.status_code == 409 and "message" in paused.json()
    assert admin.post(f"{url}{started.json()['id']}/explode/").status_code == 404
    assert admin.get(f"{url}999/").status_code == 404
    missing = admin.post(url, {"release": 1, "endpoint": "nope"}, format="json")
    assert missing.status_code == 404 and "nope" in missing.json()["message"]
    assert Evaluation.objects.count() == 1


def test_an_annotator_sees_no_evaluation(release):  # noqa: F811
    annotator = client_for(make_member(release.project, Role.ANNOTATOR))
    assert annotator.get(f"/api/projects/{release.project.slug}/evaluations/").status_code == 403
