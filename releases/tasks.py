"""Celery tasks of the releases app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="releases.tasks.build_release")
def build_release(release_id: int) -> str:
    """Build the files of a release; a release already published or failed is left alone."""
    from releases.services import release_build

    return release_build(release_id=release_id).status


@shared_task(name="releases.tasks.sweep_stuck_releases")
def sweep_stuck_releases() -> int:
    """Send again the builds whose message was lost or whose worker died; after
    releases.services.jobs.MAX_ATTEMPTS started builds the release is marked failed with a reason."""
    from annotation.services.common import sweep_each
    from releases.services import release_requeue, releases_stuck

    return sweep_each(
        releases_stuck(), lambda pk: release_requeue(release_id=pk), "stuck release builds"
    )


@shared_task(name="releases.tasks.push_release_to_hub")
def push_release_to_hub(release_id: int) -> str:
    """Push a release's dataset folder to the Hub (releases/hf_push.py); a release not marked
    pushing is left alone."""
    from releases.hf_push import release_push_hub

    return release_push_hub(release_id=release_id).hub_status
