"""Running an import batch: every row checked before any is kept, all written in one transaction.

On PostgreSQL the file is read once (``imports.services.staged``): each row is checked and
COPYed into a temporary staging table, ids are checked by SQL, and one INSERT … SELECT writes
the items, all in one transaction that keeps nothing when any row has an error (the errors
still come out by line, capped, with the true count). SQLite, and PostgreSQL with
``STAGED_ON_POSTGRESQL`` off, run the two passes below.

1. Pass 1, ``validate_stream``: every row is checked against the project's import schema
   (``imports.services.mapping.import_schema``, with the kind's item mapper) and ids are looked
   up in the project, batch by batch. Progress (bytes and rows checked) is saved every
   ``PROGRESS_EVERY_SECONDS`` at most. Any problem: the batch fails with every error located
   (capped list, true count); nothing is written.
2. Pass 2, ``iter_clean_batches`` inside ONE ``transaction.atomic``: items are bulk-created in
   batches and opened in the project's first active stage; with the duplicate policy "update",
   existing items get a revision (``services.item_revise``) when their content changed. Should
   the second pass find anything (the file changed, an id appeared meanwhile), the transaction
   rolls back and the batch fails: a failed import keeps nothing.

A run starts by claiming the batch (``imports.services.jobs``), so running it twice is safe.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from django.db import connection, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Model
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotation import services
from annotation.errors import ApplicationError
from annotation.models import Item, ItemStage, Project
from annotation.tasks import item_search_index
from annotation.workflows import WORKFLOWS
from imports.core import (
    ImportRejected,
    ImportReport,
    RowError,
    RowSchema,
    iter_clean_batches,
    validate_stream,
)
from imports.core.pipeline import CleanRow
from imports.models import ImportBatch
from imports.services.jobs import batch_fail, batch_finished_announce, import_batch_claim
from imports.services.mapping import (
    ItemFields,
    ItemMapper,
    MappedSchema,
    checked_schema,
    import_schema,
    item_mapper,
    map_row,
)
from imports.services.staged import StagedRejected, staged_write
from imports.services.uploads import inline_max_bytes

logger = logging.getLogger(__name__)

#: PostgreSQL imports run in one pass through a staging table (``imports.services.staged``);
#: False runs the two-pass pipeline there too (benchmarks/io_scale.py measures both).
STAGED_ON_POSTGRESQL = True
ERROR_CAP = 200
WRITE_BATCH_SIZE = 1000
PROGRESS_EVERY_SECONDS = 0.5


def import_batch_start(*, batch: ImportBatch, run_inline: bool | None = None) -> ImportBatch:
    """Run a pending batch now (small files) or enqueue ``run_import`` after commit.

    ``run_inline`` None decides by size (``RUNGWISE_IMPORT_INLINE_MAX_BYTES``).
    """
    if run_inline is None:
        run_inline = batch.file_size <= inline_max_bytes()
    if run_inline:
        return import_batch_run(batch_id=batch.pk)
    from imports.tasks import run_import

    services.enqueue_on_commit(run_import, batch.pk)
    return batch


class _ProgressWriter:
    """Save progress at most every PROGRESS_EVERY_SECONDS.

    During pass 2 the writes happen inside one long transaction, whose updates other sessions
    cannot see; progress then goes through a second database connection in autocommit mode
    (PostgreSQL only — SQLite allows one writer, so the page shows "writing" without numbers).
    """

    def __init__(self, batch_id: int) -> None:
        self.batch_id = batch_id
        self.last = 0.0
        self._side: BaseDatabaseWrapper | None = None

    def save(self, force: bool = False, **values: Any) -> None:
        now = time.monotonic()
        if not force and now - self.last < PROGRESS_EVERY_SECONDS:
            return
        self.last = now
        if connection.in_atomic_block:
            self._save_aside(values)
        else:
            ImportBatch.objects.filter(pk=self.batch_id).update(**values)

    def _save_aside(self, values: Mapping[str, Any]) -> None:
        if connection.vendor != "postgresql":
            return
        if self._side is None:
            self._side = connections.create_connection("default")
            with self._side.cursor() as cursor:
                # Never wait on a lock for a progress figure.
                cursor.execute("SET lock_timeout = '200ms'")
        # Hand-written because the ORM has no way to run an UPDATE on a second connection of
        # its own (the default one is inside pass 2's transaction, whose writes nobody sees).
        columns = ", ".join(f"{_column(ImportBatch, name)} = %({name})s" for name in values)
        sql = (
            f"UPDATE {connection.ops.quote_name(ImportBatch._meta.db_table)} SET {columns} "
            f"WHERE {_column(ImportBatch, 'id')} = %(batch_id)s"
        )
        try:
            with self._side.cursor() as cursor:
                cursor.execute(sql, {**values, "batch_id": self.batch_id})
        except Exception:  # progress is a nicety; never fail the import for it
            logger.warning("could not save import progress", exc_info=True)

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None


def _column(model: type[Model], name: str) -> str:
    """The quoted database column of ``model``'s field ``name`` (for hand-written SQL)."""
    column = getattr(model._meta.get_field(name), "column", None)
    if not isinstance(column, str):
        raise TypeError(f"{model.__name__}.{name} has no column")
    return connection.ops.quote_name(column)


def _existing_lookup(project: Project) -> Callable[[Sequence[str]], Collection[str]]:
    def lookup(ids: Sequence[str]) -> Collection[str]:
        return set(
            Item.objects.filter(project=project, external_id__in=list(ids)).values_list(
                "external_id", flat=True
            )
        )

    return lookup


def import_batch_run(*, batch_id: int) -> ImportBatch:
    """Validate, then write, one batch. Safe to call twice: a batch that already succeeded or
    failed (or that another worker is running) is returned as it is."""
    batch = import_batch_claim(batch_id)
    if batch is None:
        found = ImportBatch.objects.filter(pk=batch_id).first()
        if found is None:
            raise ApplicationError(f"There is no import batch {batch_id}.", status=404)
        return found
    progress = _ProgressWriter(batch.pk)
    try:
        return _run(batch, progress)
    except Exception as error:  # an unexpected failure still ends the batch, with a reason
        logger.exception("import batch %s failed", batch.pk)
        message = (
            error.message
            if isinstance(error, ApplicationError)
            else (
                f"The import stopped on an internal error ({type(error).__name__}); nothing was "
                f"imported. Try again, or report it with the batch number {batch.pk}."
            )
        )
        batch.refresh_from_db()
        return batch_fail(batch, None, message)
    finally:
        progress.close()


def _run(batch: ImportBatch, progress: _ProgressWriter) -> ImportBatch:
    project = batch.project
    options = batch.options or {}
    layout = options.get("layout", "rows")
    policy = options.get("duplicate_policy", "reject")
    schema = import_schema(project, layout)
    if connection.vendor == "postgresql" and STAGED_ON_POSTGRESQL:
        try:
            report, created, updated = staged_write(
                batch=batch,
                schema=MappedSchema(schema, item_mapper(project, layout), options),
                policy=policy,
                progress=progress,
                error_cap=ERROR_CAP,
            )
        except StagedRejected as rejected:
            return batch_fail(batch, rejected.report, rejected.message)
        return _succeeded(batch, report, created, updated, policy)
    checked = checked_schema(schema, item_mapper(project, layout), options)
    lookup = _existing_lookup(project)
    with batch.file.open("rb") as handle:

        def on_rows(rows: int) -> None:
            progress.save(rows_done=rows, bytes_done=min(handle.tell(), batch.file_size))

        report = validate_stream(
            handle,
            fmt=batch.format,
            schema=checked,
            duplicate_policy=policy,
            existing_ids=lookup,
            progress=on_rows,
            error_cap=ERROR_CAP,
            filename=batch.filename,
            array_key=options.get("array_key"),
        )
    batch.rows_total = batch.rows_done = report.rows_total
    batch.bytes_done = batch.file_size
    if not report.ok:
        return batch_fail(batch, report, report.summary())
    if report.sha256 != batch.sha256:
        return batch_fail(
            batch,
            report,
            "The stored file no longer matches the upload (SHA-256); upload it again.",
        )
    if report.rows_total == 0:
        return batch_fail(
            batch, report, f"{batch.filename} holds no rows: there is nothing to import."
        )
    batch.status = ImportBatch.Status.WRITING
    batch.validated_at = timezone.now()
    batch.save(update_fields=["status", "validated_at", "rows_total", "rows_done", "bytes_done"])
    try:
        created, updated = _write(batch, schema, lookup, progress, report.sha256)
    except ImportRejected as rejected:
        return batch_fail(
            batch,
            rejected.report,
            f"Nothing was imported: {rejected.reason}.",
        )
    return _succeeded(batch, report, created, updated, policy)


def _succeeded(
    batch: ImportBatch, report: ImportReport, created: int, updated: int, policy: str
) -> ImportBatch:
    """End ``batch`` as SUCCEEDED with its counts and a one-line message."""
    batch.status = ImportBatch.Status.SUCCEEDED
    batch.items_created, batch.items_updated = created, updated
    batch.rows_written = report.rows_total
    batch.error_count, batch.errors = 0, []
    batch.finished_at = timezone.now()
    batch.message = (
        f"Imported {report.rows_total:,} row{pluralize(report.rows_total)}: "
        f"{created:,} new item{pluralize(created)}"
        + (f", {updated:,} updated" if policy == "update" else "")
        + (
            f", {report.rows_update - updated:,} unchanged"
            if policy == "update" and report.rows_update > updated
            else ""
        )
        + "."
    )
    batch.save(
        update_fields=[
            "status", "items_created", "items_updated", "rows_written", "error_count", "errors",
            "finished_at", "message",
        ]
    )  # fmt: skip
    batch_finished_announce(batch)
    if created or updated:
        # The new and changed items wait in the search queue (read directly by the data
        # manager's search) until this task indexes them (annotation/search.py).
        services.enqueue_on_commit(item_search_index)
    return batch


@transaction.atomic
def _write(
    batch: ImportBatch,
    schema: RowSchema,
    lookup: Callable[[Sequence[str]], Collection[str]],
    progress: _ProgressWriter,
    sha256: str,
) -> tuple[int, int]:
    """Pass 2: every row, in one transaction (ImportRejected rolls it all back)."""
    project = batch.project
    options = batch.options or {}
    mapper = item_mapper(project, options.get("layout", "rows"))
    first_stage = project.stages.filter(is_active=True).order_by("position").first()
    created = updated = written = 0
    with batch.file.open("rb") as handle:
        for rows in iter_clean_batches(
            handle,
            fmt=batch.format,
            schema=schema,
            duplicate_policy=options.get("duplicate_policy", "reject"),
            existing_ids=lookup,
            batch_size=WRITE_BATCH_SIZE,
            expected_sha256=sha256,
            filename=batch.filename,
            array_key=options.get("array_key"),
        ):
            new_rows = [row for row in rows if row.action == "create"]
            if new_rows:
                created += _create_items(batch, new_rows, schema, mapper, options, first_stage)
            changed = [row for row in rows if row.action == "update"]
            if changed:
                updated += _update_items(batch, changed, schema, mapper, options)
            written += len(rows)
            progress.save(rows_written=written)
    if created:
        _open_created(batch, first_stage)
    if created:
        services.planner_statistics_refresh(Item, ItemStage)
    return created, updated


def _open_created(batch: ImportBatch, first_stage) -> None:
    """Start work on the items ``batch`` created: the workflow's ``open_items`` when it has one
    (annotation/workflows.py; CausalT5k clusters near-duplicates first), else open them in the
    project's first active stage."""
    project = batch.project
    created = Item.objects.filter(import_batch=batch)
    workflow = WORKFLOWS.get(project.kind)
    if workflow is not None and workflow.open_items is not None:
        workflow.open_items(project=project, items=created)
    elif first_stage is not None:
        services.item_stages_open(items=created, stage=first_stage)


def _fields(row: CleanRow, schema: RowSchema, mapper: ItemMapper, options) -> ItemFields:
    # Pass 1 ran the same mapper on the same (checksum-verified) rows, so this cannot fail.
    return map_row(row.data, schema, mapper, options)


def _create_items(batch, rows: list[CleanRow], schema, mapper, options, first_stage) -> int:
    """Insert new items (COPY on PostgreSQL, bulk_create elsewhere). They are opened in the
    first stage once, after the last batch (``services.item_stages_open``), so that the items of
    one group are spread apart as a whole, whichever batches they came in."""
    now = timezone.now()
    items = []
    for row in rows:
        fields = _fields(row, schema, mapper, options)
        items.append(
            (row.external_id, fields.payload, fields.group, fields.purpose,
             fields.source or batch.filename[:200])
        )  # fmt: skip
    if connection.vendor == "postgresql":
        # COPY, which the ORM cannot say: the fastest way PostgreSQL loads the rows of a large
        # file. PostgreSQL-only; SQLite takes bulk_create below.
        names = ("project", "external_id", "payload", "source", "group", "purpose",
                 "import_batch", "status", "version", "created_at")  # fmt: skip
        columns = ", ".join(_column(Item, name) for name in names)
        statement = f"COPY {connection.ops.quote_name(Item._meta.db_table)} ({columns}) FROM STDIN"
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        with connection.cursor() as cursor:
            with cursor.cursor.copy(statement) as copy:
                for external_id, payload, group, purpose, source in items:
                    copy.write_row(
                        (batch.project_id, external_id, dumps(payload), source, group, purpose,
                         batch.pk, Item.Status.ACTIVE, 1, now)
                    )  # fmt: skip
        return len(items)
    Item.objects.bulk_create(
        [
            Item(project_id=batch.project_id, external_id=external_id, payload=payload,
                 group=group, purpose=purpose, source=source, import_batch=batch)
            for external_id, payload, group, purpose, source in items
        ],
        batch_size=WRITE_BATCH_SIZE,
    )  # fmt: skip
    return len(items)


def _update_items(batch, rows: list[CleanRow], schema, mapper, options) -> int:
    by_id = {
        item.external_id: item
        for item in Item.objects.filter(
            project_id=batch.project_id, external_id__in=[row.external_id for row in rows]
        )
    }
    changes = []
    for row in rows:
        item = by_id[row.external_id]
        fields = _fields(row, schema, mapper, options)
        if fields.payload != item.payload:
            changes.append((row, item, fields))
    busy = services.items_with_open_work([item.pk for _, item, _ in changes])
    if busy:
        report = ImportReport(fmt=batch.format)
        for row, item, _ in changes:
            if item.pk in busy:
                report.add_error(
                    RowError(
                        line=row.line,
                        index=row.index,
                        field="id",
                        code="open_work",
                        found=row.external_id,
                        message=f"{row.external_id} is being annotated in "
                        f"{', '.join(busy[item.pk])}; update it when that work is resolved, "
                        f"so that no vote mixes judgements of two versions.",
                    )
                )
        raise ImportRejected(
            report, f"{len(busy):,} items to update are being annotated ({report.errors[0]})"
        )
    updated = 0
    for row, item, fields in changes:
        services.item_revise(
            item=item,
            payload=fields.payload,
            author=batch.created_by,
            reason=f"import #{batch.pk} ({batch.filename}, line {row.line})",
        )
        updated += 1
    return updated
