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


@shared_task(name="ratings.tasks.stop_settled")
def stop_settled(stage_id: int) -> int:
    """Live stopping on a rating stage: stop the item stages of the ordered pairs whose label
    is settled (ratings.stopping.stopping_run). Returns how many it stopped; a second run
    stops none of them again."""
    from ratings.stopping import stopping_run

    return stopping_run(stage_id=stage_id).stopped


@shared_task(name="ratings.tasks.store_counts")
def store_counts(project_id: int) -> bool:
    """Store a large ratings project's import-determined counts (ratings/stored_counts.py)."""
    from ratings.stored_counts import project_counts_store

    return project_counts_store(project_id=project_id)
