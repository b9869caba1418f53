"""annotation/sql.py: the hot path's hand-written statements give what the ORM gives."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotation import services, sql
from annotation.access import access_stage_for_annotator
from annotation.errors import NotFound, PermissionDenied
from annotation.models import Assignment, Item, ItemStage, Project, Stage
from api.serializers import (
    AnnotationSerializer,
    AssignmentSerializer,
    annotation_out,
    assignment_out,
)
from tests.factories import make_member, pipeline

pytestmark = pytest.mark.django_db


def fields(instance) -> dict:
    return {
        field.attname: getattr(instance, field.attname)
        for field in type(instance)._meta.concrete_fields
    }


def loaded(model, pk):
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {sql.columns(model, 'x')} FROM {sql.table(model)} x WHERE x.{model._meta.pk.column} = %s",
            [pk],
        )
        return sql.load(model, cursor.fetchone())


@pytest.mark.parametrize("model", [Project, Stage, Item, ItemStage, Assignment, Token, "user"])
def test_loaded_instances_equal_the_orms_value_for_value_and_type(model):
    project, verify, _, (alice, *_) = pipeline(items=3)
    Item.objects.filter(project=project).update(
        payload={"text": 'a "quoted" \\ line\nbreak', "n": [1, 2.5, None]}
    )
    assignment = services.assignment_next(
        annotator=alice, stage=access_stage_for_annotator(user=alice, stage_id=verify.pk)
    )
    token = Token.objects.create(user=alice)
    model = get_user_model() if model == "user" else model
    instance = {
        Project: project, Stage: verify, Item: assignment.item_stage.item,
        ItemStage: assignment.item_stage, Assignment: assignment, Token: token,
    }.get(model, alice)  # fmt: skip
    expected = fields(model.objects.get(pk=instance.pk))
    got = loaded(model, instance.pk)
    assert not got._state.adding and got._state.db == "default"
    assert fields(got) == expected
    assert {key: type(value) for key, value in fields(got).items()} == {
        key: type(value) for key, value in expected.items()
    }
    if model is Assignment:
        assert isinstance(got.expires_at, datetime) and got.expires_at.tzinfo is not None


def test_ids_beyond_the_key_column_find_nothing_instead_of_failing():
    project, verify, _, (alice, *_) = pipeline(items=1)
    api = APIClient()
    api.force_authenticate(alice)
    huge = 2**63
    assert not sql.in_range(Assignment, huge) and sql.in_range(Assignment, huge - 1)
    response = api.post(f"/api/stages/{huge}/next/")
    assert response.status_code == 404, response.content
    assert response.json()["message"] == "There is no such stage in your projects."
    response = api.post(
        f"/api/assignments/{huge}/submit/", {"payload": {"value": "keep"}}, format="json"
    )
    assert response.status_code == 404, response.content


def test_token_sign_in_accepts_a_key_and_refuses_unknown_keys_and_inactive_users():
    project, verify, _, (alice, bob, _) = pipeline(items=2)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    response = api.post(f"/api/stages/{verify.pk}/next/")
    assert response.status_code == 200 and response.wsgi_request.user == alice
    assert response.wsgi_request.auth.user_id == alice.pk

    # Session authentication comes first, so DRF answers 403 (not 401) to a refused token.
    api.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = api.post(f"/api/stages/{verify.pk}/next/")
    assert response.status_code == 403 and response.json()["message"] == "Invalid token."

    bob_key = Token.objects.create(user=bob).key
    get_user_model().objects.filter(pk=bob.pk).update(is_active=False)
    api.credentials(HTTP_AUTHORIZATION=f"Token {bob_key}")
    response = api.post(f"/api/stages/{verify.pk}/next/")
    assert response.status_code == 403 and "inactive" in response.json()["message"]


def test_the_lean_responses_equal_the_serializers_that_document_them():
    project, verify, _, (alice, *_) = pipeline(items=2)
    project.settings = {"hidden_payload_fields": ["secret"]}
    project.save()
    Item.objects.filter(project=project).update(
        payload={"text": "It rained.", "secret": "x", "_gold": "keep"}
    )
    assignment = services.assignment_next(
        annotator=alice, stage=access_stage_for_annotator(user=alice, stage_id=verify.pk)
    )
    out = assignment_out(assignment)
    assert out == AssignmentSerializer(assignment).data
    assert out["item"]["payload"] == {"text": "It rained."}
    annotation, _ = services.annotation_submit(
        assignment_id=assignment.pk, annotator=alice, payload={"value": "keep"}, seconds_spent=2.5
    )
    assert annotation_out(annotation) == AnnotationSerializer(annotation).data


def test_a_member_with_another_role_is_refused_and_a_stranger_sees_no_stage():
    project, verify, _, _ = pipeline(items=1)
    researcher = make_member(project, role="researcher")
    stranger = make_member(pipeline(items=1)[0])
    with pytest.raises(PermissionDenied, match="Only the project's annotators"):
        access_stage_for_annotator(user=researcher, stage_id=verify.pk)
    with pytest.raises(NotFound, match="no such stage"):
        access_stage_for_annotator(user=stranger, stage_id=verify.pk)


def test_quoted_names_a_models_columns_by_field_or_attname_and_refuses_others():
    quote = connection.ops.quote_name
    assert sql.quoted(ItemStage, "c").item == f"c.{quote('item_id')}"
    assert sql.quoted(ItemStage, "c").item_id == f"c.{quote('item_id')}"
    assert sql.quoted(Item).group == quote("group")  # a reserved word, safe once quoted
    with pytest.raises(Exception, match="has no field named 'item_stage_ids'"):
        _ = sql.quoted(ItemStage, "c").item_stage_ids
    with pytest.raises(AttributeError, match="has no column"):
        _ = sql.quoted(Item).item_stages  # a reverse relation


def _hot_statements() -> list[str]:
    """Every hand-written statement of the hot path and the access check, as built."""
    from annotation import access
    from annotation.eligibility import BUILT_IN_RULES
    from annotation.services import leases, next_item, setup, submit
    from api import auth
    from api.views import annotate_lean

    rules = [{"rule": rule.name} for rule in BUILT_IN_RULES]
    for spec in rules:
        if spec["rule"] in ("not_in_stage", "after_stage"):
            spec["stage"] = "first"
        if spec["rule"] == "skill":
            spec["tag"] = "medicine"
    rules.append({"rule": "blind", "made_from": "case_id"})
    phases = '[{"people": "any"}, {"people": "new"}, {"people": "same"}]'
    searches = [
        next_item._candidate_sql(policy, connection.vendor, phases, json.dumps(rules))[0]
        for policy in Stage.OrderPolicy.values
    ]
    return [
        *searches,
        *(next_item._lease_sql(search) for search in searches),
        next_item._insert_lease_sql(connection.vendor),
        submit._submit_sql(connection.vendor),
        submit._record_submission_sql(connection.vendor),
        leases._locked_assignment_sql(connection.vendor, True),
        access._stage_for_annotator_sql(connection.vendor),
        auth._token_sql(connection.vendor),
        annotate_lean._next_read_sql(connection.vendor),
        annotate_lean._submit_read_sql(connection.vendor),
        setup._open_sql("postgresql"),
        setup._open_sql("sqlite"),
    ]


def test_the_hot_paths_statements_name_every_column_quoted():
    """CONTRIBUTING.md, "SQL you can change safely": no ``alias.column`` left unquoted."""
    from django.apps import apps

    columns = {
        field.column
        for model in apps.get_models()
        for field in model._meta.concrete_fields
        if field.column
    }
    bare = [
        (match.group(0), statement[max(0, match.start() - 40) : match.end() + 20])
        for statement in _hot_statements()
        for match in re.finditer(r"\b[A-Za-z_]\w*\.([A-Za-z_]\w*)\b", statement)
        if match.group(1) in columns
    ]
    assert bare == []
