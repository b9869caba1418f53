"""Celery tasks of the ratings app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

from celery import shared_task

from ratings import services


@shared_task(name="ratings.tasks.refresh_analysis")
def refresh_analysis(project_id: int, source: str = "all", run_id: int | None = None) -> bool:
    """Compute and store the researcher page's analysis of (source, run) unless the stored one
    is current (ratings.services.analysis_refresh). Returns True when it computed."""
    return services.analysis_refresh(project_id=project_id, source=source, run_id=run_id)
