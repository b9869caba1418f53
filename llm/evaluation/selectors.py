"""Reads behind the evaluation page and the API. Callers fetch the project with access_project
first; these functions only read."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.models import Project
from llm.evaluation.services import evaluation_table
from llm.models import Endpoint, Evaluation
from releases.models import Release


def evaluations(project: Project) -> QuerySet[Evaluation]:
    """The project's evaluations, newest first, with what their rows show."""
    return (
        Evaluation.objects.filter(release__project=project)
        .select_related("release", "endpoint", "run")
        .order_by("-created_at")
    )


def evaluable_releases(project: Project) -> QuerySet[Release]:
    return Release.objects.filter(project=project, status=Release.Status.PUBLISHED).order_by(
        "-version"
    )


def endpoints() -> QuerySet[Endpoint]:
    return Endpoint.objects.order_by("name")


def evaluation_summary(evaluation: Evaluation, *, table: bool = False) -> dict[str, Any]:
    """An evaluation as the API and the page's JSON give it (``table``: with its figures)."""
    run = evaluation.run
    summary: dict[str, Any] = {
        "id": evaluation.pk,
        "release": evaluation.release.version,
        "release_sha256": evaluation.release_sha256,
        "workflow": evaluation.workflow,
        "endpoint": evaluation.endpoint.name,
        "model": evaluation.endpoint.model,
        "mode": evaluation.mode,
        "status": run.status,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "calls": run.calls,
        "cost": str(run.cost),
        "error": run.error,
        "questions": evaluation.questions,
        "answered": evaluation.answered,
        "created_at": evaluation.created_at,
        "finished_at": evaluation.finished_at,
    }
    if table:
        summary["table"] = evaluation_table(evaluation)
    return summary
