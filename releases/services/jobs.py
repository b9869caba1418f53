"""The life cycle of a release build as a background job (``annotation.jobs.JobLifecycle``):
claimed by a build attempt, sent again by the beat sweep when its message was lost or its
worker died, failed with a reason after ``MAX_ATTEMPTS`` started attempts; an admin's retry and
"mark failed".

A release is queued while BUILDING with no attempt started, and running while BUILDING since
``started_at``; PUBLISHED and FAILED end it. A published release never changes, so nothing
here touches one (a retry of it is a 409).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import Q

from annotation.errors import ApplicationError, Conflict
from annotation.jobs import MAX_ATTEMPTS, STALE_AFTER, JobLifecycle
from releases.models import Release

__all__ = [
    "MAX_ATTEMPTS",
    "STALE_AFTER",
    "release_claim",
    "release_mark_failed",
    "release_requeue",
    "releases_stuck",
]


class ReleaseJobs(JobLifecycle[Release]):
    """Release builds: BUILDING (queued, then running) → PUBLISHED | FAILED."""

    model = Release
    finished = (Release.Status.PUBLISHED, Release.Status.FAILED)
    related = ("project",)

    def task(self) -> Any:
        from releases.tasks import build_release

        return build_release

    def queued(self) -> Q:
        return Q(status=Release.Status.BUILDING, started_at__isnull=True)

    def running(self) -> Q:
        return Q(status=Release.Status.BUILDING, started_at__isnull=False)

    def fail(self, job: Release, message: str) -> Release:
        job.status = Release.Status.FAILED
        job.message = message
        job.save(update_fields=["status", "message"])
        return job

    def gave_up_message(self, job: Release) -> str:
        return (
            f"The build was started {job.attempts} times and never finished (is a worker "
            f"running, with enough memory and time? See its log). Retry it from the admin, or "
            f"publish again."
        )

    def retry_refusal(self, job: Release, *, reset_attempts: bool) -> ApplicationError | None:
        if job.status == Release.Status.PUBLISHED:
            return Conflict(f"v{job.version} is published; a published release never changes.")
        if not reset_attempts:
            return None
        if job.status == Release.Status.BUILDING and self.is_live(job):
            assert job.started_at is not None  # is_live says so
            return Conflict(
                f"v{job.version} is being built right now (started "
                f"{job.started_at:%H:%M:%S} UTC); wait for it to finish or fail."
            )
        if (
            job.status == Release.Status.FAILED
            and Release.objects.filter(project_id=job.project_id, status=Release.Status.BUILDING)
            .exclude(pk=job.pk)
            .exists()
        ):
            return Conflict("Another version of this project is being built; wait for it.")
        return None

    def reset_fields(self, job: Release, now: datetime) -> Mapping[str, Any]:
        # A fresh created_at: the sweep's grace period counts from the retry.
        return {"status": Release.Status.BUILDING, "created_at": now}


RELEASE_JOBS = ReleaseJobs()


def release_claim(release_id: int) -> Release | None:
    """Start a build attempt of a BUILDING release that is not being built (never started, or
    started so long ago that its worker is dead); None when it is not ours to build."""
    return RELEASE_JOBS.claim(release_id)


def releases_stuck(*, now: datetime | None = None, grace_seconds: float | None = None) -> list[int]:
    """BUILDING releases whose build never started within ``grace_seconds`` of publishing (the
    message was lost: broker down, or restarted empty) or started longer than STALE_AFTER ago
    (the worker died)."""
    return RELEASE_JOBS.stuck(now=now, grace_seconds=grace_seconds)


def release_requeue(*, release_id: int, reset_attempts: bool = False) -> Release:
    """Send a stuck build again, or mark it failed after MAX_ATTEMPTS started builds. Also an
    admin's "retry" (``reset_attempts``: a fresh count; a failed release goes back to
    building)."""
    return RELEASE_JOBS.requeue(release_id, reset_attempts=reset_attempts)


def release_mark_failed(*, release_id: int, reason: str) -> Release:
    """An admin's decision: a BUILDING release stops here, with their reason (its version is
    reused by the next publish)."""
    return RELEASE_JOBS.mark_failed(release_id, reason=reason)
