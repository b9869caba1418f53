"""The stage form's adaptive overlap fields (studio.stage_form.adaptive_view,
studio.forms.StageEditForm.adaptive_changes): a confidence target and a cap, stored as the
policy option "confidence" and max_overlap, refused in words where they cannot work."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from annotation.models import Project
from tests.factories import make_label_stage, make_user
from tests.studio.test_views_setup import stage_form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def label(client):
    client.force_login(make_user("staffer", is_staff=True))
    client.post(reverse("studio:new"), {"workflow": "generic", "slug": "p", "name": "P"})
    return make_label_stage(Project.objects.get(slug="p"), overlap=2, choices=("a", "b"))


def post(client, stage, **fields):
    url = reverse("studio:stage_edit", args=[stage.project.slug, stage.pk])
    return client.post(url, stage_form_data(stage, **fields))


def test_the_stage_form_turns_adaptive_overlap_on_and_off(client, label):
    response = post(
        client,
        label,
        adaptive_confidence="0.85",
        max_overlap="5",
        tie_policy="extra_annotation",
    )
    assert response.status_code == 302, html.unescape(response.content.decode())[:800]
    label.refresh_from_db()
    assert (label.policy_options, label.max_overlap) == ({"confidence": 0.85}, 5)
    page = client.get(reverse("studio:setup", args=["p"])).content.decode()
    # shown in its own field, not as an option row (which would post it twice)
    assert 'name="adaptive_confidence" value="0.85"' in page
    assert 'name="option-name-0" value=""' in page
    assert 'name="max_overlap" min="0" max="100" value="5"' in page

    assert post(client, label, adaptive_confidence="", max_overlap="5").status_code == 302
    label.refresh_from_db()
    assert label.policy_options == {}


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"adaptive_confidence": "high"}, "must be a number such as 0.85"),
        ({"adaptive_confidence": "1.5"}, "confidence must be a probability from 0.5 to 0.999"),
        (
            {"adaptive_confidence": "0.9", "max_overlap": "1"},
            "is below the 2 annotators every item starts with",
        ),
        ({"max_overlap": "500"}, "max_overlap must be from 0 to 100"),
    ],
)
def test_adaptive_settings_that_cannot_work_are_refused_in_words(client, label, fields, said):
    response = post(client, label, **fields)
    assert response.status_code == 400
    assert said in html.unescape(response.content.decode())
    label.refresh_from_db()
    assert (label.policy_options, label.max_overlap) == ({}, 0)
