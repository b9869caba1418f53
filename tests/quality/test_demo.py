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


# Where silent gold items fall in a person's queue is drawn from their id and their leases'
# ids (annotation/services/next_item.py, _gold_search), which PostgreSQL's sequences and
# SQLite's reused ids give out differently: people made before the demo's shift every draw, and
# the demo must show the same states whatever the draw.
@pytest.mark.parametrize("people_before", [0, 1, 2, 3])
def test_the_demo_screens_out_one_participant_and_pauses_one_annotator(client, people_before):
    for number in range(people_before):
        make_user(f"earlier{number}")
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
