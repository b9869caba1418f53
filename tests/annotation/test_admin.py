"""The Django admin: every engine model is registered, its list pages filter and search, and
records of what happened (annotations) cannot be edited or deleted."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation
from tests.factories import PASSWORD, pipeline

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in_superuser(client, django_user_model):
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    assert client.login(username="root", password=PASSWORD)
    return client


@pytest.fixture
def annotated():
    _, verify, _, (alice, *_) = pipeline(overlap=1, items=2, annotators=1)
    assignment = services.assignment_next(
        annotator=alice, stage=access_stage_for_annotator(user=alice, stage_id=verify.pk)
    )
    annotation, _ = services.annotation_submit(
        assignment_id=assignment.pk, annotator=alice, payload={"value": "keep"}
    )
    return annotation


ENGINE_MODELS = list(apps.get_app_config("annotation").get_models())


def test_every_engine_model_is_in_the_admin():
    assert [model.__name__ for model in ENGINE_MODELS if model not in admin.site._registry] == []


@pytest.mark.parametrize("model", ENGINE_MODELS, ids=lambda model: model.__name__)
def test_each_list_page_renders_with_search_and_its_first_filter(
    signed_in_superuser, annotated, model
):
    model_admin = admin.site._registry[model]
    url = reverse(f"admin:annotation_{model._meta.model_name}_changelist")
    assert signed_in_superuser.get(url).status_code == 200
    if model_admin.search_fields:
        assert signed_in_superuser.get(url, {"q": "item"}).status_code == 200
    assert model_admin.list_filter, f"{model.__name__} has no list filters"


def test_annotations_are_read_only_in_the_admin(signed_in_superuser, annotated):
    change = reverse("admin:annotation_annotation_change", args=[annotated.pk])
    page = signed_in_superuser.get(change)
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    signed_in_superuser.post(change, {"payload": '{"value": "reject"}'})
    assert Annotation.objects.get(pk=annotated.pk).payload["value"] == "keep"
    assert signed_in_superuser.get(reverse("admin:annotation_annotation_add")).status_code == 403
    delete = reverse("admin:annotation_annotation_delete", args=[annotated.pk])
    assert signed_in_superuser.post(delete, {"post": "yes"}).status_code == 403
    assert Annotation.objects.filter(pk=annotated.pk).exists()


def test_the_project_page_has_stage_and_membership_inlines(signed_in_superuser, annotated):
    project = annotated.item_stage.stage.project
    html = signed_in_superuser.get(
        reverse("admin:annotation_project_change", args=[project.pk])
    ).content.decode()
    assert "stages-TOTAL_FORMS" in html and "memberships-TOTAL_FORMS" in html
