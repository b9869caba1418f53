"""Celery tasks of the imports app: ids in, look the rows up, call a service; safe to run twice
(CONTRIBUTING.md, "Celery tasks")."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="imports.tasks.run_import")
def run_import(batch_id: int) -> str:
    """Validate and write one import batch; a batch already finished is left alone."""
    from imports.services import import_batch_run

    return import_batch_run(batch_id=batch_id).status
