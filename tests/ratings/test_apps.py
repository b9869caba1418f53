"""The ratings app plugs into the demo seed and registers its task kind."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import Annotation, Item, Membership, Project
from ratings.models import ModelRun, RatingsSetup

pytestmark = pytest.mark.django_db


def test_the_demo_seed_adds_a_ratings_project_once(capsys):
    call_command("seed_demo")
    call_command("seed_demo")  # safe to run again
    project = Project.objects.get(slug="ratings-demo")
    setup = RatingsSetup.objects.get(project=project)
    assert project.kind == "ratings"
    assert Item.objects.filter(project=project, purpose="regular").count() == 128
    assert Item.objects.filter(project=project, purpose="practice").count() == 3
    assert Item.objects.filter(project=project, purpose="attention_check").count() == 3
    assert Annotation.objects.filter(item_stage__stage=setup.historic_stage).count() == 128 * 15
    assert ModelRun.objects.filter(project=project).count() == 1
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles["researcher"] == "researcher" and roles["annotator2"] == "annotator"
    assert set(roles) == {
        "admin",
        "researcher",
        "reviewer",
        "annotator1",
        "annotator2",
        "annotator3",
    }
