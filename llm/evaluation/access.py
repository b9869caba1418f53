"""Permission-checked fetch of an evaluation (see annotation/access.py for the rule): the
caller has fetched the project with ``access_project`` for the role it needs."""

from __future__ import annotations

from typing import Any

from annotation.errors import NotFound
from annotation.models import Project
from llm.models import Evaluation


def access_evaluation(user: Any, project: Project, evaluation_id: int) -> Evaluation:
    evaluation = (
        Evaluation.objects.select_related("release", "endpoint", "run")
        .filter(pk=evaluation_id, release__project=project)
        .first()
    )
    if evaluation is None:
        raise NotFound(f"{project.name} has no evaluation {evaluation_id}.")
    return evaluation
