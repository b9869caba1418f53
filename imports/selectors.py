"""Reads behind the import pages and the API. Callers fetch the project with access_project
first; these functions only read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet
from django.utils import timezone

from annotation.models import Project
from imports.core import RowError
from imports.core.schema import SCHEMAS, RowSchema, field_cell_text
from imports.models import ImportBatch


def import_batches(project: Project) -> QuerySet[ImportBatch]:
    return (
        ImportBatch.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-created_at", "-pk")
    )


def import_batch(project: Project, batch_id: int) -> ImportBatch | None:
    return import_batches(project).filter(pk=batch_id).first()


# --- Progress of a batch (what the import pages and the API show) ---------------------------


@dataclass(frozen=True)
class ImportProgress:
    """What the progress bar shows: percent (None = unknown), rows/s, seconds left."""

    phase: str
    percent: float | None
    rows_per_second: float | None
    eta_seconds: float | None
    rows: int
    finished: bool
    elapsed_seconds: float | None = None


def import_batch_progress(batch: ImportBatch, *, now: datetime | None = None) -> ImportProgress:
    """Progress of a batch: validation is the first half of the bar, writing the second."""
    now = now or timezone.now()
    status = batch.status
    finished = status in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED)
    if finished:
        rows = batch.rows_written if status == ImportBatch.Status.SUCCEEDED else batch.rows_done
        elapsed = (
            (batch.finished_at - batch.started_at).total_seconds()
            if batch.finished_at and batch.started_at
            else None
        )
        rate = batch.rows_total / elapsed if elapsed else None
        return ImportProgress(status, 100.0, rate, 0.0, rows, True, elapsed)
    if status == ImportBatch.Status.PENDING or batch.started_at is None:
        return ImportProgress(status, 0.0, None, None, 0, False)
    if status == ImportBatch.Status.VALIDATING:
        fraction = batch.bytes_done / batch.file_size if batch.file_size else 0.0
        percent = 50.0 * fraction
        elapsed = max((now - batch.started_at).total_seconds(), 1e-3)
        rows, rate = batch.rows_done, batch.rows_done / elapsed if batch.rows_done else None
    else:
        fraction = batch.rows_written / batch.rows_total if batch.rows_total else 0.0
        percent = 50.0 + 50.0 * fraction
        started = batch.validated_at or batch.started_at
        elapsed = max((now - started).total_seconds(), 1e-3)
        rows = batch.rows_written
        rate = rows / elapsed if rows else None
    total_elapsed = max((now - batch.started_at).total_seconds(), 1e-3)
    eta = total_elapsed * (100.0 - percent) / percent if percent >= 1.0 else None
    if status == ImportBatch.Status.WRITING and batch.rows_written == 0 and percent == 50.0:
        # Pass-2 progress is not visible (SQLite) or not yet saved: say "unknown".
        return ImportProgress(status, None, None, None, rows, False, total_elapsed)
    return ImportProgress(status, percent, rate, eta, rows, False, total_elapsed)


def import_batch_errors(batch: ImportBatch) -> list[RowError]:
    return [RowError.from_dict(error) for error in batch.errors or []]


# --- A registered schema's column table and sample file (the workflows' own import pages) -----


def registered_schema(name: str) -> RowSchema | None:
    """The schema a plug-in registered under ``name`` (``Plugin.import_schemas``), or None."""
    return SCHEMAS.get(name)


def schema_sample_table(schema: RowSchema) -> tuple[list[str], list[list[str]]]:
    """Two sample rows of ``schema`` as CSV cells (``cell_text``): the columns are the fields
    of the first row (fields whose example is None are left out)."""
    rows = schema.sample_rows(2)
    specs = [spec for spec in schema.fields if spec.name in rows[0]]
    return [spec.name for spec in specs], [
        [field_cell_text(spec, row.get(spec.name, "")) for spec in specs] for row in rows
    ]


def schema_sample_lines(schema: RowSchema) -> str:
    """Two sample rows of ``schema`` as JSON Lines, each value with its own JSON type."""
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in schema.sample_rows(2))
