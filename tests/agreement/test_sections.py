"""Sections other apps add to a stage's Agreement page (agreement/sections.py), through the one
registered today: the llm app's "Models against people" — present on a stage with a model rater,
absent without, its figures and review CSV behind the page's access rule (researchers and
admins; annotators get 403)."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from agreement import sections
from annotation.models import Role
from tests.factories import PASSWORD, make_member
from tests.llm import calibration_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(django_capture_on_commit_callbacks):
    return calibration_study.build(django_capture_on_commit_callbacks, slug="sections")


def client_for(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def stage_url(study, name="agreement:stage", *extra) -> str:
    return reverse(name, args=[study.project.slug, study.stage.slug, *extra])


def test_the_llm_section_is_registered_with_its_figures_and_table():
    assert {"models-agreement", "models-confusion", "models-reliability"} <= (
        sections.figure_names()
    )
    assert "models-review" in sections.table_names()


def test_the_stage_page_shows_models_against_people_to_researchers(study):
    response = client_for(study.researcher).get(stage_url(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Models against people" in page
    assert "sections-model · sections-model v1" in page
    # κ with the decision (7/17), the review queue's one item linked to the item page.
    assert "0.41" in page
    item = study.project.items.get(external_id="item-4")
    assert reverse("studio:item", args=[study.project.slug, item.pk]) in page
    for name in ("models-agreement", "models-confusion", "models-reliability"):
        assert stage_url(study, "agreement:plot", name) in page
    assert stage_url(study, "agreement:csv", "models-review") in page


def test_no_section_on_a_stage_without_model_raters(django_capture_on_commit_callbacks):
    plain = calibration_study.build(
        django_capture_on_commit_callbacks, slug="plain", with_model=False
    )
    researcher = make_member(plain.project, Role.RESEARCHER, username="plain-r2")
    response = client_for(researcher).get(stage_url(plain))
    assert response.status_code == 200
    assert "Models against people" not in response.content.decode()


@pytest.mark.parametrize(
    "target",
    [
        ("agreement:stage",),
        ("agreement:plot", "models-reliability"),
        ("agreement:csv", "models-review"),
    ],
)
def test_annotators_are_refused(study, target):
    # The model's own (inactive in production) user is an annotator too: refused alike.
    response = client_for(study.annotator).get(stage_url(study, *target))
    assert response.status_code == 403


@pytest.mark.parametrize("name", ["models-agreement", "models-confusion", "models-reliability"])
def test_figures_are_served_as_svg(study, name):
    response = client_for(study.researcher).get(stage_url(study, "agreement:plot", name))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in response.content


def test_an_unknown_figure_or_table_is_404(study):
    client = client_for(study.researcher)
    assert client.get(stage_url(study, "agreement:plot", "models-nothing")).status_code == 404
    assert client.get(stage_url(study, "agreement:csv", "models-nothing")).status_code == 404


def test_the_review_queue_csv(study):
    response = client_for(study.researcher).get(stage_url(study, "agreement:csv", "models-review"))
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["item_stage_id", "item_id", "external_id"]
    (row,) = rows[1:]
    assert row[2] == "item-4"
    assert row[4] == "sections-model · sections-model v1"
    assert row[5:9] == ["temporal", "0.8", "causal", "3"]


def test_the_csv_is_spreadsheet_safe(study):
    """An item text starting with "=" is not a formula in the download."""
    from annotation.models import Item

    Item.objects.filter(project=study.project, external_id="item-4").update(
        payload={"text": '=HYPERLINK("http://example.com")'}
    )
    response = client_for(study.researcher).get(stage_url(study, "agreement:csv", "models-review"))
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    row = list(csv.reader(io.StringIO(text)))[1]
    assert not row[3].startswith("=")


@pytest.mark.parametrize(
    ("workflow", "tab"), [("meter", "meter:meter"), ("causalt5k", "causalt5k:report")]
)
def test_the_workflow_tabs_include_the_section(django_capture_on_commit_callbacks, workflow, tab):
    tabbed = calibration_study.build(
        django_capture_on_commit_callbacks, slug=f"tab-{workflow}", kind=workflow
    )
    url = reverse(tab, args=[tabbed.project.slug])
    page = client_for(tabbed.researcher).get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Models against people · Label" in text
    assert stage_url(tabbed, "agreement:csv", "models-review") in text
    assert client_for(tabbed.annotator).get(url).status_code == 403


@pytest.mark.parametrize(
    ("workflow", "tab"), [("meter", "meter:meter"), ("causalt5k", "causalt5k:report")]
)
def test_the_workflow_tabs_show_nothing_without_model_raters(
    django_capture_on_commit_callbacks, workflow, tab
):
    plain = calibration_study.build(
        django_capture_on_commit_callbacks,
        slug=f"plain-{workflow}",
        kind=workflow,
        with_model=False,
    )
    page = client_for(plain.researcher).get(reverse(tab, args=[plain.project.slug]))
    assert page.status_code == 200
    assert "Models against people" not in page.content.decode()
