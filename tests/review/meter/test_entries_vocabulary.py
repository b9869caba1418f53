"""METER entries' vocabulary (review/meter/entries.py) at import, through the METER tab's upload
(``meter:entries_upload``): a level outside 1–3 and a distractor category outside METER's four
— in the canonical form and in the five-options form — refuse the file naming the line, the
field path and the allowed values, with nothing written."""

from __future__ import annotations

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Item, ItemStage, Role
from review.meter.entries import CATEGORIES
from review.meter.fixtures import ENTRIES, entry_line
from tests.factories import make_member
from tests.review.meter.test_meter import meter, verified  # noqa: F401 — the fixture

pytestmark = pytest.mark.django_db


def with_question(number: int, **changes) -> dict:
    questions = [dict(question) for question in ENTRIES["esl-0001"]]
    questions[number].update(changes)
    return {"pair_id": "meci-0005", "questions": questions}


def options_with_category(number: int, category: str) -> dict:
    entry = with_question(number)
    options = [dict(option) for option in entry["questions"][number]["options"]]
    wrong = next(index for index, option in enumerate(options) if not option.get("correct"))
    options[wrong]["category"] = category
    entry["questions"][number]["options"] = options
    return entry, wrong


def upload(client, project, *entries):
    text = "".join(json.dumps(entry) + "\n" for entry in entries)
    return client.post(
        reverse("meter:entries_upload", args=[project.slug]),
        {"file": SimpleUploadedFile("entries.jsonl", text.encode())},
    )


def state(project):
    return (
        Item.objects.filter(project=project).count(),
        ItemStage.objects.filter(item__project=project).count(),
    )


@pytest.fixture
def signed_in(meter, client):  # noqa: F811 — the fixture imported above
    project, _, _ = verified(meter)
    client.force_login(make_member(project, role=Role.ADMIN, username="meter-admin"))
    return project


def test_a_level_outside_one_to_three_is_refused_with_line_field_and_the_levels(client, signed_in):
    project = signed_in
    before = state(project)
    response = upload(client, project, entry_line("esl-0001"), with_question(1, level=4))
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "<td>line 2</td><td><code>questions[1].level</code></td>" in page
    assert "expected 1, 2 or 3, found 4" in page
    assert state(project) == before


def test_an_unknown_category_in_the_options_form_names_every_allowed_category(client, signed_in):
    project = signed_in
    before = state(project)
    entry, wrong = options_with_category(2, "red herring")
    response = upload(client, project, entry_line("esl-0001"), entry)
    page = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert f"<td>line 2</td><td><code>questions[2].options[{wrong}].category</code></td>" in page
    assert "unknown distractor category 'red herring'" in page
    for label in CATEGORIES.values():
        assert label in page
    assert state(project) == before


def test_category_spellings_match_loosely_and_import(client, signed_in):
    project = signed_in
    entry, _ = options_with_category(0, "  CAUSAL_reversal ")
    before = state(project)
    response = upload(client, project, entry)
    assert response.status_code == 302
    assert state(project)[0] == before[0] + 1
