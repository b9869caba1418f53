"""Reads behind the import pages and the API. Callers fetch the project with access_project
first; these functions only read."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Project
from imports.models import ImportBatch


def import_batches(project: Project) -> QuerySet[ImportBatch]:
    return (
        ImportBatch.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-created_at", "-pk")
    )


def import_batch(project: Project, batch_id: int) -> ImportBatch | None:
    return import_batches(project).filter(pk=batch_id).first()
