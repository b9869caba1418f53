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


def test_an_upload_over_the_cap_is_refused_before_anything_is_stored(settings, tmp_path):
    import io

    from annotation.models import Item
    from imports.models import ImportBatch
    from imports.services import import_batch_create
    from tests.factories import make_project, make_verify_stage

    settings.MEDIA_ROOT = tmp_path
    settings.RUNGWISE_UPLOAD_MAX_BYTES = 1000
    project = make_project()
    make_verify_stage(project)
    big = b"".join(b'{"id": "i%d", "text": "%s"}\n' % (n, b"x" * 40) for n in range(40))
    with pytest.raises(ApplicationError) as refused:
        import_batch_create(
            project=project, user=None, fileobj=io.BytesIO(big), filename="big.jsonl", options={}
        )
    assert refused.value.status == 413 and "at most" in refused.value.message
    assert "RUNGWISE_UPLOAD_MAX_BYTES" in refused.value.message

    class Stream:  # a stream that does not say its size
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def read(self, n=-1):
            return self.data.read(n)

    with pytest.raises(ApplicationError, match="larger than"):
        import_batch_create(
            project=project, user=None, fileobj=Stream(big), filename="big.jsonl", options={}
        )
    assert not ImportBatch.objects.exists() and not Item.objects.exists()


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(monkeypatch):
    import io

    from imports.core import readers
    from imports.core.pipeline import validate_stream
    from imports.core.schema import generic_schema

    monkeypatch.setattr(readers, "LINE_LIMIT", 1000)
    data = b'{"id": "a"}\n' + b'{"id": "' + b"x" * 5000 + b'"}\n'
    report = validate_stream(io.BytesIO(data), fmt="jsonl", schema=generic_schema())
    assert report.fatal
    assert [(error.line, error.code) for error in report.errors] == [(2, "line_too_long")]


# --- What the database cannot store, sent as JSON escapes ----------------------------------
# A lone surrogate reaches the server only as the escape "\ud800" in JSON text (no UTF-8 byte
# sequence spells it), so these bodies are written as raw text.


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"payload": {"value": "keep", "comment": "\\ud800"}}', "payload.comment"),
        ('{"payload": {"value": "keep", "notes": ["ok", "x\\udfffy"]}}', "payload.notes[1]"),
        ('{"payload": {"value": "keep", "n\\ud800": 1}}', "payload"),
        ('{"payload": {"value": "keep"}, "client_info": {"ua": "\\ud800"}}', "client_info.ua"),
        ('{"payload": {"value": "keep", "comment": "a\\u0000b"}}', "payload.comment"),
        ('{"payload": {"value": "keep", "score": 1e400}}', "payload.score"),
    ],
)
def test_text_and_numbers_the_database_cannot_store_are_400s_naming_the_path(lease, body, where):
    api, url, alice, _ = lease
    response = api.post(url, body, content_type="application/json")
    assert response.status_code == 400, response.content
    error = response.json()
    assert set(error) == {"message", "extra"}
    assert where in error["message"], error
    assert Annotation.objects.count() == 0
    assert api.post(url, {"payload": {"value": "keep"}}, format="json").status_code == 201
    # The same answer changed through revise is refused the same way, keeping the first version.
    first = Annotation.objects.get()
    revised = api.post(
        f"/api/annotations/{first.pk}/revise/", body, content_type="application/json"
    )
    assert revised.status_code == 400, revised.content
    assert where in revised.json()["message"]
    assert list(Annotation.all_versions.values_list("pk", flat=True)) == [first.pk]


def test_the_services_refuse_unpaired_surrogates_wherever_they_come_from(lease):
    _, _, alice, _ = lease
    assignment = Assignment.objects.get(annotator=alice, status="active")
    with pytest.raises(ApplicationError, match="unpaired surrogate") as refused:
        services.annotation_submit(
            assignment_id=assignment.pk,
            annotator=alice,
            payload={"value": "keep", "spans": {"a": ["\ud83d"]}},
        )
    assert "payload.spans.a[0]" in refused.value.message
    with pytest.raises(ApplicationError, match="unpaired surrogate"):
        services.assignment_skip(assignment_id=assignment.pk, annotator=alice, reason="\udc00")
    assert not Annotation.objects.exists()
    assignment.refresh_from_db()
    assert assignment.status == "active"
