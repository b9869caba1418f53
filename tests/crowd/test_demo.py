"""The crowd demo seeded by seed_demo: a study at /s/demo-pilot/ with three simulated
participants, one per outcome."""

from __future__ import annotations

import pytest
from django.urls import reverse

from crowd import demo
from crowd.models import Participant
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_demo_study_has_one_participant_per_outcome_and_seeds_once(client):
    admin = make_user("admin", is_superuser=True, is_staff=True)
    study = demo.seed(users={"admin": admin, "researcher": make_user("researcher")})
    assert study.token == "demo-pilot"
    statuses = list(Participant.objects.order_by("pk").values_list("status", flat=True))
    assert statuses == ["completed", "screened_out", "active"]
    assert demo.seed(users={}) is None  # twice: nothing more
    client.force_login(admin)
    page = client.get(reverse("crowd:study", args=[demo.SLUG, study.pk])).content.decode()
    assert "failed 1 attention check (FAILED_CHECK)" in page and "3 / 10" in page
    response = client.get(reverse("crowd:enter", args=["demo-pilot"]) + "?PROLIFIC_PID=" + "a" * 24)
    assert response.status_code == 400
