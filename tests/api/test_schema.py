"""Property-based API tests: schemathesis generates requests from our OpenAPI schema and sends
them to the WSGI app as a project admin (who is also an annotator); no response may be a 5xx,
and every response must match the schema (status code, content type, body)."""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.core import signals
from django.core.cache import cache
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agreement.models import AgreementSnapshot
from annotation.models import Item, Role
from imports.models import ImportBatch
from releases.services import release_publish
from rungwise.wsgi import application
from tests.factories import make_items, make_member, make_project, make_verify_stage


def openapi() -> dict:
    """The schema /api/schema/ serves, generated without a request (and without the database)."""
    document = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(document))


schema = schemathesis.openapi.from_dict(openapi())
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(autouse=True)
def _forget_throttle_counts():
    """Generated requests include hundreds of submits by one user: forget the throttles'
    counters afterwards, or the next test's user (the same id on SQLite) starts throttled."""
    yield
    cache.clear()


@pytest.fixture
def world(db, settings, tmp_path, django_capture_on_commit_callbacks):
    """One project with every kind of object the API serves, and the admin's token."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    project = make_project(slug="api-world")
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 12)
    admin = make_member(project, Role.ADMIN, "api-admin")
    from annotation import services

    services.membership_add(project=project, user=admin, role=Role.ANNOTATOR)
    Item.objects.filter(project=project, external_id__lt="item-00006").update(status="accepted")
    with django_capture_on_commit_callbacks(execute=True):
        release = release_publish(project=project, user=admin)
    release.refresh_from_db()
    assert release.status == "published", release.message
    batch = ImportBatch.objects.create(project=project, filename="x.jsonl", format="jsonl")
    AgreementSnapshot.objects.create(stage=stage, metric="fleiss_kappa", value=0.5)
    item = Item.objects.filter(project=project).first()
    # The WSGI handler closes "old" connections after each request, which would end the test's
    # transaction; Django's own test client switches this off the same way.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield {
        "token": Token.objects.create(user=admin).key,
        "ids": {
            "slug": project.slug,
            "stage_id": stage.pk,
            "item_id": item.pk,
            "batch_id": batch.pk,
            "version": release.version,
            "assignment_id": None,
        },
    }
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def _aim(case, ids: dict) -> None:
    """Point most generated path parameters at real objects (deterministically, from the
    generated value), keeping some random ones to probe unknown ids."""
    for name, generated in list((case.path_parameters or {}).items()):
        real = ids.get(name)
        if real is None:
            continue
        if len(str(generated)) % 4 != 0:
            case.path_parameters[name] = real


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case, world):
    _aim(case, world["ids"])
    headers = {"Authorization": f"Token {world['token']}"}
    case.call_and_validate(app=application, headers=headers, checks=CHECKS)


def test_schema_documents_every_endpoint_and_the_error_format():
    document = openapi()
    paths = set(document["paths"])
    assert {
        "/api/auth/token/",
        "/api/projects/",
        "/api/projects/{slug}/stages/",
        "/api/projects/{slug}/items/",
        "/api/projects/{slug}/imports/",
        "/api/projects/{slug}/imports/{batch_id}/",
        "/api/projects/{slug}/agreement/",
        "/api/projects/{slug}/releases/",
        "/api/projects/{slug}/releases/{version}/download/",
        "/api/stages/{stage_id}/next/",
        "/api/assignments/{assignment_id}/submit/",
    } <= paths
    error = document["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"message", "extra"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for code in ("400", "401", "403", "404", "409", "429"):
                assert code in operation["responses"], (method, path, code)
