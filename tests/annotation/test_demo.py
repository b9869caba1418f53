"""The engine's demo (annotation/demo.py): the stranded-items project shows what the item
actions rescue — a stranded item, a discarded one with its history, an open lease."""

from __future__ import annotations

import pytest

from annotation import api
from annotation.demo import RESCUE_SLUG, engine_demo_seed
from annotation.fixtures.demo_users import DEMO_USERS
from annotation.models import Assignment, Item, ItemEvent, Project
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_rescue_demo_has_a_stranded_item_a_discarded_one_and_an_open_lease(
    django_capture_on_commit_callbacks,
):
    users = {name: make_user(name) for name, _, _ in DEMO_USERS}
    with django_capture_on_commit_callbacks(execute=True):
        engine_demo_seed(users=users)
        engine_demo_seed(users=users)  # safe to run again
    project = Project.objects.get(slug=RESCUE_SLUG)
    (stranded,) = api.item_stages_stranded(project)
    assert (stranded.missing, stranded.eligible) == (1, 0)
    statuses = sorted(Item.objects.filter(project=project).values_list("status", flat=True))
    assert statuses == ["accepted", "active", "active", "discarded"]
    assert ItemEvent.objects.get(item__project=project).action == "discard"
    assert Assignment.objects.filter(
        stage__project=project, status=Assignment.Status.ACTIVE, annotator=users["annotator1"]
    ).exists()
    assert Assignment.objects.filter(
        stage__project=project, status=Assignment.Status.SKIPPED, annotator=users["annotator3"]
    ).exists()
