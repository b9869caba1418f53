"""The quality demo seeded by seed_demo: a gold-checked crowd study with a participant screened
out and an annotator paused automatically, both explained on the stage's quality page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from crowd.models import Participant
from quality import demo
from quality.models import QualityAction
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


def test_the_demo_screens_out_one_participant_and_pauses_one_annotator(client):
    users = {
        name: make_user(name)
        for name in ("admin", "researcher", "annotator1", "annotator2", "annotator3")
    }
    project = demo.seed(users=users)
    assert project is not None and demo.seed(users=users) is None  # twice: nothing more
    statuses = dict(
        Participant.objects.filter(study__project=project).values_list("platform_id", "status")
    )
    assert statuses == {f"{11:024x}": "completed", f"{12:024x}": "screened_out"}
    actions = {
        action.annotator.get_username(): action.kind
        for action in QualityAction.objects.filter(project=project, undone_at__isnull=True)
    }
    screened = next(name for name in actions if name.startswith("crowd-"))
    assert actions == {"annotator3": "pause", screened: "screen_out"}
    client.force_login(users["researcher"])
    page = client.get(reverse("quality:stage", args=[demo.SLUG, "label"])).content.decode()
    assert "gold accuracy 0 of 4" in page and "Undo: resume annotator3" in page
    client.force_login(users["annotator3"])
    stage = project.stages.get()
    screen = client.get(reverse("annotation:stage", args=[stage.pk])).content.decode()
    assert "paused by the researchers" in screen
