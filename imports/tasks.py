"""Celery tasks of the imports app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="imports.tasks.run_import")
def run_import(batch_id: int) -> str:
    """Validate and write one import batch; a batch already finished is left alone."""
    from imports.services import import_batch_run

    return import_batch_run(batch_id=batch_id).status


@shared_task(name="imports.tasks.sweep_stuck_imports")
def sweep_stuck_imports() -> int:
    """Send again the import runs whose message was lost or whose worker died; after
    imports.services.jobs.MAX_ATTEMPTS started runs the batch is marked failed with a reason."""
    from annotation.services.common import sweep_each
    from imports.services import import_batch_requeue, import_batches_stuck

    return sweep_each(
        import_batches_stuck(), lambda pk: import_batch_requeue(batch_id=pk), "stuck imports"
    )
