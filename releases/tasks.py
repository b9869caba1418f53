"""Celery tasks of the releases app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="releases.tasks.build_release")
def build_release(release_id: int) -> str:
    """Build the files of a release; a release already published or failed is left alone."""
    from releases.services import release_build

    return release_build(release_id=release_id).status
