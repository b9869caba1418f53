"""Ratings' vocabulary at import (ratings/import_schemas.py), through the Import page
(``ratings:import``): a purpose, an order or a connective outside the project's, and a rating
or an expected value off its scale, refuse the file naming line, field and the values allowed,
with nothing written."""

from __future__ import annotations

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Annotation, Item
from ratings.import_schemas import PURPOSES
from studio.services import project_from_template
from tests.factories import make_user

pytestmark = pytest.mark.django_db

PAIRS = "pair_id,sentence_a,sentence_b\np1,The road was icy.,Cars slid off it.\n"
CONNECTIVES = ("so", "because", "then", "after")


@pytest.fixture
def project(client):
    admin = make_user("rate-admin", is_staff=True)
    project = project_from_template(workflow="ratings", slug="rate", name="Rate", creator=admin)
    client.force_login(admin)
    return project


def upload(client, project, text: str, what: str):
    response = client.post(
        reverse("ratings:import", args=[project.slug]),
        {"file": SimpleUploadedFile(f"{what}.csv", text.encode()), "what": what},
    )
    return response, html.unescape(response.content.decode())


def problem_row(line: int, field: str) -> str:
    return f'<tr><td class="num">{line}</td><td><code>{field}</code></td><td>'


HEADER = "pair_id,sentence_a,sentence_b,purpose,connective,order,expected_min,expected_max\n"
GOOD = "p1,The road was icy.,Cars slid off it.,,,,,\n"


@pytest.mark.parametrize(
    "row, field, words",
    [
        ("p2,A.,B.,training,,,,", "purpose", ["unknown purpose 'training'", *PURPOSES]),
        ("p2,A.,B.,practice,therefore,AB,7,10", "connective", ["'therefore'", *CONNECTIVES]),
        ("p2,A.,B.,practice,so,CA,7,10", "order", ["order must be AB or BA, not 'CA'"]),
        ("p2,A.,B.,attention_check,so,AB,,12", "expected_max", ["12 is outside the scale 1–10"]),
        ("p2,A.,B.,,so,,,", "connective", ["give a connective only on practice"]),
    ],
)
def test_a_pairs_row_outside_the_vocabulary_is_refused(client, project, row, field, words):
    response, page = upload(client, project, HEADER + GOOD + row + "\n", "pairs")
    assert response.status_code == 400 and "Nothing was imported" in page
    start = page.index(problem_row(3, field))
    message = page[start : page.index("</tr>", start)]
    for word in words:
        assert word in message
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    "row, field, words",
    [
        ("p1,AB,therefore,r1,8", "connective", ["unknown connective 'therefore'", *CONNECTIVES]),
        ("p1,AC,so,r1,8", "order", ["order must be AB or BA"]),
        ("p1,AB,so,r1,11", "rating", ["11 is outside the scale 1–10"]),
        ("p9,AB,so,r1,8", "pair_id", ["no item", "import its pair first"]),
    ],
)
def test_a_ratings_row_outside_the_vocabulary_is_refused(client, project, row, field, words):
    upload(client, project, PAIRS, "pairs")
    good = "p1,BA,because,r1,7\n"
    text = "pair_id,order,connective,rater,rating\n" + good + row + "\n"
    response, page = upload(client, project, text, "ratings")
    assert response.status_code == 400
    start = page.index(problem_row(3, field))
    message = page[start : page.index("</tr>", start)]
    for word in words:
        assert word in message
    assert not Annotation.objects.filter(item_stage__item__project=project).exists()
