"""Reads behind the release pages and the API. Callers fetch the project with access_project
first; these functions only read."""

from __future__ import annotations

from django.db.models import QuerySet

from annotation.models import Project
from releases.models import Release


def releases(project: Project) -> QuerySet[Release]:
    return Release.objects.filter(project=project).select_related("created_by").order_by("-version")
