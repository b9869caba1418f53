"""The interop demo: the Label Studio export generated at seed time is imported into *Earlier
labels (Label Studio)*, stays on disk for a newcomer to upload again, and seeding twice changes
nothing."""

from __future__ import annotations

import json

import pytest

from annotation.models import Annotation, Item
from interop.demo import DEMO_SLUG, demo_export_path, seed
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_demo_imports_its_generated_export_once(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    project = seed(users={"admin": make_user("admin")})
    tasks = json.loads(demo_export_path().read_text())
    assert len(tasks) == Item.objects.filter(project=project).count() == 8
    imported = Annotation.objects.filter(item_stage__stage__slug="earlier")
    assert imported.count() == 23
    assert project.memberships.filter(user__username="admin").exists()
    seed(users={})
    assert Annotation.objects.filter(item_stage__item__project__slug=DEMO_SLUG).count() == 23
