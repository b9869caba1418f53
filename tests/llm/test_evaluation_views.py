"""The evaluation page (llm/evaluation/views.py): researchers see each model beside the
release's people (plot and table) and download a spreadsheet-safe CSV; admins start and control
evaluations; annotators see nothing."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Role
from llm.models import Evaluation
from tests.factories import make_member, make_project
from tests.llm.releases import explica_files, published_release
from tests.llm.test_evaluation_services import endpoint, release  # noqa: F401 -- fixtures

pytestmark = pytest.mark.django_db


def test_researchers_see_models_beside_people_and_admins_start_runs(
    client,
    release,  # noqa: F811
    endpoint,  # noqa: F811
    django_capture_on_commit_callbacks,
):
    project = release.project
    page = reverse("llm-evaluation:evaluations", args=[project.slug])
    admin = make_member(project, Role.ADMIN)
    client.force_login(admin)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            reverse("llm-evaluation:start", args=[project.slug]),
            {"release": release.pk, "endpoint": endpoint.pk, "mode": "chat"},
        )
    assert started.status_code == 302 and started.url.endswith("?release=1")
    evaluation = Evaluation.objects.get()
    client.force_login(make_member(project, Role.RESEARCHER))
    shown = client.get(page)
    html = shown.content.decode()
    assert shown.status_code == 200
    assert "<svg" in html and "people" in html and f"{endpoint.name} · #{evaluation.pk}" in html
    assert "0.667" in html and "0.500" in html  # accuracy of the model and of the people
    assert 'action="' + reverse("llm-evaluation:start", args=[project.slug]) not in html
    mae = client.get(page, {"metric": "mae"}).content.decode()
    assert "task=counterfactual" in mae
    # a researcher may not start or control
    assert (
        client.post(
            reverse("llm-evaluation:start", args=[project.slug]),
            {"release": release.pk, "endpoint": endpoint.pk, "mode": "chat"},
        ).status_code
        == 403
    )
    control = reverse("llm-evaluation:control", args=[project.slug, evaluation.pk, "pause"])
    assert client.post(control).status_code == 403
    client.force_login(admin)
    assert client.post(control).status_code == 409  # finished: nothing to pause


def test_the_csv_is_spreadsheet_safe(
    client,
    endpoint,  # noqa: F811
    tmp_path,
    settings,
    django_capture_on_commit_callbacks,
):
    """A model id that a spreadsheet would read as a formula is written as text."""
    settings.MEDIA_ROOT = tmp_path / "media"
    endpoint.model = "=HYPERLINK(1)"
    endpoint.save(update_fields=["model"])
    project = make_project(slug="explica-csv", kind="ratings")
    published = published_release(project, explica_files(), tmp_path)
    client.force_login(make_member(project, Role.ADMIN))
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("llm-evaluation:start", args=[project.slug]),
            {"release": published.pk, "endpoint": endpoint.pk, "mode": "chat"},
        )
    evaluation = Evaluation.objects.get()
    response = client.get(reverse("llm-evaluation:csv", args=[project.slug, evaluation.pk]))
    assert response["Content-Disposition"].endswith(f'-evaluation-{evaluation.pk}.csv"')
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {"all", "relation=causal", "order=iconic"} <= {row["group"] for row in rows}
    assert {row["model_id"] for row in rows} == {"'=HYPERLINK(1)"}
    assert {row["release_sha256"] for row in rows} == {published.sha256}


def test_annotators_see_no_evaluation(client, release):  # noqa: F811
    client.force_login(make_member(release.project, Role.ANNOTATOR))
    page = reverse("llm-evaluation:evaluations", args=[release.project.slug])
    assert client.get(page).status_code == 403
