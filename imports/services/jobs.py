"""The life cycle of an import batch as a background job (``annotation.jobs.JobLifecycle``):
claimed by a run, sent again by the beat sweep when its message was lost or its worker died,
failed with a reason after ``MAX_ATTEMPTS`` started runs; an admin's retry and "mark failed".

A batch is queued while PENDING and running while VALIDATING or WRITING; a run that dies keeps
nothing (pass 2 writes in one transaction), so running a batch again is always safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone

from annotation import events
from annotation.errors import ApplicationError, Conflict
from annotation.jobs import MAX_ATTEMPTS, STALE_AFTER, JobLifecycle
from imports.core import ImportReport
from imports.models import ImportBatch

__all__ = [
    "MAX_ATTEMPTS",
    "STALE_AFTER",
    "batch_fail",
    "import_batch_claim",
    "import_batch_mark_failed",
    "import_batch_requeue",
    "import_batches_stuck",
]

FINISHED = (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED)
RUNNING = (ImportBatch.Status.VALIDATING, ImportBatch.Status.WRITING)


def batch_fail(batch: ImportBatch, report: ImportReport | None, message: str) -> ImportBatch:
    """End ``batch`` as FAILED with ``message`` (and the report's errors and counts, when
    given); nothing of it is kept, so its written counts go to zero."""
    batch.status = ImportBatch.Status.FAILED
    batch.finished_at = timezone.now()
    batch.message = message
    fields = ["status", "finished_at", "message"]
    if report is not None:
        batch.errors = [error.to_dict() for error in report.errors]
        batch.error_count = max(report.error_count, 1 if not report.ok else 0)
        batch.rows_total = report.rows_total
        batch.rows_done = report.rows_total
        fields += ["errors", "error_count", "rows_total", "rows_done"]
    batch.items_created = batch.items_updated = batch.rows_written = 0
    batch.save(update_fields=[*fields, "items_created", "items_updated", "rows_written"])
    batch_finished_announce(batch)
    return batch


def batch_finished_announce(batch: ImportBatch) -> None:
    """The project event ``import.finished`` for a batch just ended (annotation/events.py,
    "Project events"): its status and counts, never its rows."""
    events.project_event(
        "import.finished",
        project_id=batch.project_id,
        data={
            "import": {
                "id": batch.pk,
                "filename": batch.filename,
                "status": batch.status,
                "rows": batch.rows_total,
                "items_created": batch.items_created,
                "items_updated": batch.items_updated,
                "error_count": batch.error_count,
                "message": batch.message,
            }
        },
    )


class ImportJobs(JobLifecycle[ImportBatch]):
    """Import batches: PENDING → VALIDATING → WRITING → SUCCEEDED | FAILED."""

    model = ImportBatch
    finished = FINISHED
    related = ("project",)

    def task(self) -> Any:
        from imports.tasks import run_import

        return run_import

    def queued(self) -> Q:
        return Q(status=ImportBatch.Status.PENDING)

    def running(self) -> Q:
        return Q(status__in=RUNNING)

    def claim_fields(self) -> Mapping[str, Any]:
        return {
            "status": ImportBatch.Status.VALIDATING,
            "validated_at": None,
            "rows_done": 0,
            "rows_written": 0,
            "bytes_done": 0,
        }

    def fail(self, job: ImportBatch, message: str) -> ImportBatch:
        return batch_fail(job, None, message)

    def gave_up_message(self, job: ImportBatch) -> str:
        return (
            f"The import was started {job.attempts} times and never finished (is a worker "
            f"running, with enough memory and time? See its log); nothing was imported. "
            f"Retry it, or upload the file again."
        )

    def retry_refusal(self, job: ImportBatch, *, reset_attempts: bool) -> ApplicationError | None:
        if reset_attempts and job.status == ImportBatch.Status.SUCCEEDED:
            return Conflict(f"{job.filename} was imported; upload it again to re-import.")
        return None

    def reset_fields(self, job: ImportBatch, now: datetime) -> Mapping[str, Any]:
        return {"status": ImportBatch.Status.PENDING, "finished_at": None}


IMPORT_JOBS = ImportJobs()


def import_batches_stuck(
    *, now: datetime | None = None, grace_seconds: float | None = None
) -> list[int]:
    """Batches whose run never started within ``grace_seconds`` of the upload (the message was
    lost: broker down, or restarted empty) or started longer than STALE_AFTER ago and never
    finished (the worker died)."""
    return IMPORT_JOBS.stuck(now=now, grace_seconds=grace_seconds)


def import_batch_requeue(*, batch_id: int, reset_attempts: bool = False) -> ImportBatch:
    """Send a stuck batch again, or mark it failed after MAX_ATTEMPTS started runs (nothing of
    it was kept: each run writes in one transaction). Also an admin's "retry"
    (``reset_attempts``: a fresh count; a failed batch runs again from its stored file)."""
    return IMPORT_JOBS.requeue(batch_id, reset_attempts=reset_attempts)


def import_batch_mark_failed(*, batch_id: int, reason: str) -> ImportBatch:
    """An admin's decision: a pending or running batch stops here, with their reason."""
    return IMPORT_JOBS.mark_failed(batch_id, reason=reason)


def import_batch_claim(batch_id: int) -> ImportBatch | None:
    """Move a pending (or abandoned) batch to VALIDATING, counting the attempt; None when it is
    not ours to run (it does not exist, is finished, or a live run has it)."""
    return IMPORT_JOBS.claim(batch_id)
