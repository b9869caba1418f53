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


def release_comparison(release: Release, metric: str | None = None) -> dict[str, Any]:
    """Every finished evaluation of ``release`` beside its people for one figure (``metric``,
    by default the first the scorer reports): ``metrics`` to choose from, ``groups`` in the
    scorer's order, ``series`` (llm.evaluation.plots.Series; the people last) and ``rows`` —
    per group, one (value, low, high, n) cell per series. The people's figures are the same in
    every evaluation of a release (scored from its files), so the latest one's are shown."""
    from llm.evaluation.plots import Series

    finished = list(
        Evaluation.objects.filter(release=release, finished_at__isnull=False)
        .select_related("endpoint")
        .order_by("created_at")
    )
    metrics: list[str] = []
    for evaluation in finished:
        for row in evaluation.results:
            if row["metric"] not in metrics:
                metrics.append(row["metric"])
    chosen = metric if metric in metrics else (metrics[0] if metrics else "")
    groups: list[str] = []
    series = []
    counts: list[dict[str, int]] = []
    sources = [(f"{e.endpoint.name} · #{e.pk}", e.results, False) for e in finished]
    if finished and finished[-1].baseline:
        sources.append(("people", finished[-1].baseline, True))
    for label, rows, people in sources:
        values, n = {}, {}
        for row in rows:
            if row["metric"] != chosen:
                continue
            if row["group"] not in groups:
                groups.append(row["group"])
            values[row["group"]] = (row["value"], row["low"], row["high"])
            n[row["group"]] = row["n"]
        if values:
            series.append(Series(label, values, people=people))
            counts.append(n)
    table = [
        {
            "group": group,
            "cells": [
                (*one.values.get(group, (None, None, None)), count.get(group))
                for one, count in zip(series, counts, strict=True)
            ],
        }
        for group in groups
    ]
    return {"metrics": metrics, "metric": chosen, "groups": groups, "series": series, "rows": table}
