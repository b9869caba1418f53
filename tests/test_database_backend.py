"""rungwise.db.postgresql: with parameters bound on the server, statements carry at most 65,535
of them; Django's batches must fit, or large projects cannot be created in bulk or deleted."""

from __future__ import annotations

import pytest
from django.db import connection

from annotation.models import Item, Project
from tests.factories import make_project

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_a_project_with_more_rows_than_a_statement_can_bind_is_created_and_deleted(postgres):
    assert connection.features.uses_server_side_binding
    project = make_project()
    count = 70_000  # > 65,535: one IN list or one INSERT of them all cannot be sent
    Item.objects.bulk_create(
        Item(project=project, external_id=f"x{index}", payload={"text": "t"})
        for index in range(count)
    )
    assert Item.objects.filter(project=project).count() == count
    project.delete()
    assert not Project.objects.filter(pk=project.pk).exists()
    assert not Item.objects.filter(external_id="x1").exists()
