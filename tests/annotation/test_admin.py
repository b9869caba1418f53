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


def _leases(stage, people):
    return [
        services.assignment_next(
            annotator=person, stage=access_stage_for_annotator(user=person, stage_id=stage.pk)
        )
        for person in people
    ]


def _counters(assignment):
    from annotation.models import ItemStage

    item_stage = ItemStage.objects.get(pk=assignment.item_stage_id)
    return item_stage.leased_count, item_stage.submitted_count


def test_deleting_an_active_lease_gives_its_slot_back_at_once(signed_in_superuser):
    from annotation.models import Assignment

    _, verify, _, people = pipeline(overlap=1, items=1, annotators=2)
    (lease,) = _leases(verify, people[:1])
    assert _counters(lease) == (1, 0)
    assert _leases(verify, people[1:]) == [None]  # the only slot is taken
    delete = reverse("admin:annotation_assignment_delete", args=[lease.pk])
    assert signed_in_superuser.post(delete, {"post": "yes"}).status_code == 302
    assert not Assignment.objects.filter(pk=lease.pk).exists()
    assert _counters(lease) == (0, 0)
    (taken,) = _leases(verify, people[1:])  # free now, not after the repair sweep
    assert taken is not None and taken.item_stage_id == lease.item_stage_id


def test_the_bulk_delete_action_gives_every_active_slot_back(signed_in_superuser):
    from annotation.models import Assignment

    _, verify, _, people = pipeline(overlap=3, items=1, annotators=3)
    leases = _leases(verify, people)
    assert _counters(leases[0]) == (3, 0)
    services.annotation_submit(
        assignment_id=leases[0].pk, annotator=people[0], payload={"value": "keep"}
    )
    assert _counters(leases[0]) == (2, 1)
    changelist = reverse("admin:annotation_assignment_changelist")
    response = signed_in_superuser.post(
        changelist,
        {
            "action": "delete_selected",
            "_selected_action": [lease.pk for lease in leases[1:]],
            "post": "yes",
        },
    )
    assert response.status_code == 302
    assert list(Assignment.objects.values_list("pk", flat=True)) == [leases[0].pk]
    assert _counters(leases[0]) == (0, 1)


def test_a_lease_with_work_is_not_deleted_and_its_slot_stays_counted(annotated):
    from django.db.models import ProtectedError

    from annotation.models import Assignment

    with pytest.raises(ProtectedError):
        services.assignments_delete(assignment_ids=[annotated.assignment_id])
    assert Assignment.objects.filter(pk=annotated.assignment_id).exists()
    assert _counters(annotated.assignment) == (0, 1)


def test_every_json_field_of_every_admin_form_reads_with_the_one_parser():
    """JSON typed into any admin form (project settings, stage settings, gold, bonuses…) is read
    by the one parser: a new admin page gets it by subclassing ``annotation.admin.EngineAdmin``."""
    from django.db.models import JSONField

    from annotation.inputs import StorableJSONDecoder

    checked = []
    for model, model_admin in admin.site._registry.items():
        for field in model._meta.get_fields():
            if isinstance(field, JSONField):
                form_field = model_admin.formfield_for_dbfield(field, request=None)
                assert form_field.decoder is StorableJSONDecoder, (model.__name__, field.name)
                checked.append(f"{model.__name__}.{field.name}")
    assert "Project.settings" in checked and "BonusPayment.bonuses" in checked


@pytest.mark.parametrize(
    "typed, named",
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than"),
        ('{"note": "a\\u0000b"}', "NUL"),
        ('{"note": "\\ud800"}', "surrogate"),
    ],
)
def test_json_the_database_cannot_store_is_a_form_error_in_the_admin(typed, named, rf):
    """Nested 100,000 deep it was a RecursionError (a 500); a NUL or an unpaired surrogate was a
    database or encoding error on save. Now the form refuses it and nothing is saved."""
    import json

    from annotation.inputs import StorableJSONDecoder
    from annotation.models import Project
    from tests.factories import make_project

    project = make_project()
    model_admin = admin.site._registry[Project]
    request = rf.get("/")
    request.user = type("Staff", (), {"is_superuser": True, "is_staff": True})()
    form_class = model_admin.get_form(request, project, fields=["settings"])
    form = form_class(data={"settings": typed}, instance=project)
    assert not form.is_valid() and "settings" in form.errors
    with pytest.raises(json.JSONDecodeError, match=named):
        json.loads(typed, cls=StorableJSONDecoder)
    project.refresh_from_db()
    assert project.settings != typed
