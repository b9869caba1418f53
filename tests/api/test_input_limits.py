"""Bad or oversized input is a clear 400 naming the field, never a 500, and writes nothing."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import Annotation, Assignment
from tests.factories import pipeline

pytestmark = pytest.mark.django_db


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.fixture
def lease():
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=2)
    api = client_for(alice)
    leased = api.post(f"/api/stages/{verify.pk}/next/").json()
    return api, f"/api/assignments/{leased['id']}/submit/", alice, verify


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"payload": {"value": "keep"}, "client_info": "ab"}, "client_info"),
        ({"payload": {"value": "keep"}, "client_info": [1]}, "client_info"),
        ({"payload": {"value": "keep"}, "client_info": {"ua": "x" * 5000}}, "client_info"),
        ({"payload": {"value": "keep", "comment": "a\x00b"}}, "comment"),
        ({"payload": {"value": "keep", "note\x00": 1}}, "payload"),
        ({"payload": {"value": "keep", "blob": "x" * 70_000}}, "payload"),
        ({"payload": {"value": "keep", "deep": [[[[[[[[[[[[1]]]]]]]]]]]]}}, "deep"),
    ],
)
def test_bad_submissions_are_400s_that_name_the_field(lease, body, field):
    api, url, _, _ = lease
    response = api.post(url, body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["extra"] or field in response.json()["message"]
    assert Annotation.objects.count() == 0
    assert api.post(url, {"payload": {"value": "keep"}}, format="json").status_code == 201


def test_nul_characters_in_reasons_are_refused_with_a_message(lease):
    _, _, alice, verify = lease
    assignment = Assignment.objects.get(annotator=alice, status="active")
    with pytest.raises(ApplicationError, match="invisible control character"):
        services.assignment_skip(assignment_id=assignment.pk, annotator=alice, reason="no\x00pe")
    assignment.refresh_from_db()
    assert assignment.status == "active"
    assert access_stage_for_annotator(user=alice, stage_id=verify.pk)
