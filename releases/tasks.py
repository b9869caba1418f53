"""Celery tasks of the releases app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="releases.tasks.build_release")
def build_release(release_id: int) -> str:
    """Build the files of a release; a release already published or failed is left alone."""
    from releases.services import release_build

    return release_build(release_id=release_id).status


@shared_task(name="releases.tasks.sweep_stuck_releases")
def sweep_stuck_releases() -> int:
    """Send again the builds whose message was lost or whose worker died; after
    releases.services.MAX_ATTEMPTS started builds the release is marked failed with a reason.
    One bad row does not stop the others."""
    from releases.services import release_requeue, releases_stuck

    done = 0
    for release_id in releases_stuck():
        try:
            release_requeue(release_id=release_id)
        except Exception:
            logger.exception("sweep: could not requeue release %s", release_id)
        else:
            done += 1
    if done:
        logger.warning("sweep sent %d stuck release builds again", done)
    return done
