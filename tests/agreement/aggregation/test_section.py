"""The "Beyond majority vote" section of a stage's Agreement page (agreement/aggregation/
section.py): majority against each model with a link to every differing item, the annotators'
reliability figure and the differing items' CSV, the cost of each policy — for researchers only."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from django.urls import reverse

from agreement import sections
from agreement.aggregation.section import FIGURE, TABLE, stage_aggregation
from agreement.aggregation.services import stage_aggregation_fit
from agreement.models import ItemPosterior
from tests.agreement.aggregation import study as planted
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def study(django_capture_on_commit_callbacks):
    built = planted.build(slug="section")
    planted.annotate(built, django_capture_on_commit_callbacks, items=15)
    stage_aggregation_fit(stage_id=built.stage.pk)
    return built


def client_for(user) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def url(study, name="agreement:stage", *extra) -> str:
    return reverse(name, args=[study.project.slug, study.stage.slug, *extra])


def test_the_section_is_registered():
    assert FIGURE in sections.figure_names()
    assert TABLE in sections.table_names()


def test_researchers_see_majority_against_each_model_and_the_costs(study):
    response = client_for(study.researcher).get(url(study))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Beyond majority vote" in page
    for label in ("Dawid–Skene", "MACE", "GLAD"):
        assert label in page
    differing = ItemPosterior.objects.filter(
        fit__stage=study.stage, fit__model="dawid_skene"
    ).select_related("item_stage__item")
    differing = [row for row in differing if row.majority != row.label]
    assert differing, "the spammers should win some pluralities the model overturns"
    for row in differing:
        assert reverse("studio:item", args=[study.project.slug, row.item_stage.item_id]) in page
    assert url(study, "agreement:plot", FIGURE) in page
    context = stage_aggregation(study.stage)
    dawid_skene = next(model for model in context.models if model.key == "dawid_skene")
    assert dawid_skene.n_differ == len(differing)
    # Cost: the annotations held now plus one per undecided item, for the plurality and each model.
    assert [cost.label.split(" ")[0] for cost in context.costs] == [
        "Plurality",
        "Dawid–Skene",
        "MACE",
        "GLAD",
    ]
    for cost in context.costs:
        assert cost.annotations == context.n_annotations + cost.undecided
        assert cost.decided + cost.undecided == context.n_items


def test_the_reliability_figure_and_the_differences_csv(study):
    client = client_for(study.researcher)
    figure = client.get(url(study, "agreement:plot", FIGURE))
    assert figure.status_code == 200
    assert b"<svg" in figure.content
    table = client.get(url(study, "agreement:csv", TABLE))
    assert table.status_code == 200
    text = b"".join(table.streaming_content).decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["model", "item", "plurality", "model decision", "posterior"]
    assert any(row[0] == "Dawid–Skene" for row in rows[1:])


def test_annotators_cannot_open_the_figure_or_the_csv(study):
    client = client_for(study.careful[0])
    assert client.get(url(study, "agreement:plot", FIGURE)).status_code == 403
    assert client.get(url(study, "agreement:csv", TABLE)).status_code == 403
    page = client.get(url(study))
    assert page.status_code == 403
