"""Imports on PostgreSQL in one pass: rows checked and COPYed into a staging table, the ids
checked set-based, then one INSERT … SELECT.

``staged_write`` runs inside ONE transaction:

1. The file is read once (``imports.core.pipeline.iter_checked_rows``, whole lines decoded a
   block at a time): each record is checked by the schema and the kind's item mapper in
   Python (what only Python can check: types, choices, a kind's rules; the simplest records
   by the schema's compiled check, imports/core/fast_rows.py), and every row that passes is
   written by ``COPY`` into a temporary staging table (no WAL, dropped with the transaction)
   as the item it will become. The errors of single records go to the report in line order
   as they are found.
2. Checks across rows run as SQL on the staging table, after an ``ANALYZE`` so that the
   planner knows its size: an id used twice in the file (``duplicate_in_file``, every repeat
   named with its first line) and, with the duplicate policy "reject", an id already in the
   project (``duplicate_existing``). Their errors are merged with those of step 1 by line,
   capped, with the true count.
3. Any error, or a file that no longer matches the upload's SHA-256, raises
   ``StagedRejected``: the transaction rolls back and the database is as it was.
4. Otherwise one ``INSERT … SELECT`` creates the new items in file order; with the policy
   "update", items whose content differs get a revision (``services.item_revise``, in Python,
   one per changed item); the new items are opened (the workflow's ``open_items`` or the first
   active stage, one INSERT … SELECT) and the tables analysed.

Foreign keys are checked once, not per row: the items' INSERT and their opening in the first
stage reference one project and one stage (locked ``FOR KEY SHARE`` first, as PostgreSQL's own
check would lock them for every row) and the items this transaction wrote, so they run with
``session_replication_role = replica``, which skips the per-row checks PostgreSQL would run at
COMMIT (``_foreign_keys_checked_once``, over the engine's ``services.foreign_keys_checked_once``;
benchmarks/README.md, "Imports at scale"). Where the database user may not set that role, the
rows are checked one by one as before. A workflow's own ``open_items`` always runs with every
check.

Memory does not grow with the file: no id is held in Python (the two-pass pipeline keeps a
map of every id to its line). Used by ``imports.services.run`` on PostgreSQL; SQLite keeps
the two-pass pipeline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Model
from django.db.utils import IntegrityError
from django.utils import timezone

from annotation import services
from annotation.models import Item, ItemStage, Project, Stage
from annotation.workflows import WORKFLOWS
from imports.core import ImportReport, RowError, RowSchema
from imports.core.pipeline import (
    duplicate_existing_error,
    duplicate_in_file_error,
    iter_checked_rows,
)
from imports.models import ImportBatch
from imports.services.mapping import MappedSchema

#: The temporary table rows are staged in (one per session; dropped with the transaction).
STAGING_TABLE = "rungwise_import_staging"
#: Changed items revised per look-up with the duplicate policy "update".
UPDATE_CHUNK = 1000
#: Memory PostgreSQL may use for the hash aggregates over the staging table (this transaction
#: only): the default 4 MB spills a million ids to disk.
WORK_MEM = "64MB"

_ITEM_COLUMNS = ("project", "external_id", "payload", "source", "group", "purpose",
                 "import_batch", "status", "version", "created_at")  # fmt: skip


_REMOVED_MEANWHILE = (
    "Nothing was imported: the project or its first stage was removed while this file was "
    "being imported."
)

_ADDED_MEANWHILE = (
    "Nothing was imported: items with some of these ids were added to the project while this "
    "file was being imported; import it again to see which."
)


class StagedRejected(Exception):
    """The import cannot go ahead; ``report`` holds the errors and ``message`` says why in
    words. Raised inside the transaction, which then keeps nothing."""

    def __init__(self, report: ImportReport, message: str) -> None:
        super().__init__(message)
        self.report = report
        self.message = message


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _item_column(name: str) -> str:
    column = getattr(Item._meta.get_field(name), "column", None)
    assert isinstance(column, str)
    return _quote(column)


@transaction.atomic
def staged_write(
    *,
    batch: ImportBatch,
    schema: MappedSchema,
    policy: str,
    progress: Any,
    error_cap: int,
) -> tuple[ImportReport, int, int]:
    """Check and write ``batch`` (module docstring); return ``(report, created, updated)``.

    ``schema`` is the checked schema (``mapping.checked_schema``), whose ``mapped`` holds the
    item fields of the row it last accepted. ``progress`` is the run's progress writer
    (``save(**fields)``). Raises ``StagedRejected`` (everything rolled back) when the file has
    errors, changed since upload, holds no rows, or updates items that are being annotated."""
    report = ImportReport(error_cap=error_cap)
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL work_mem = '{WORK_MEM}'")
        cursor.execute(f"DROP TABLE IF EXISTS {_quote(STAGING_TABLE)}")
        # A temporary table: private to this session, not WAL-logged, gone with the
        # transaction. ``n`` numbers the staged rows in file order.
        cursor.execute(
            f"""CREATE TEMPORARY TABLE {_quote(STAGING_TABLE)} (
                n integer NOT NULL, line integer, idx integer, col integer,
                external_id text NOT NULL, payload jsonb NOT NULL, grp text NOT NULL,
                purpose text NOT NULL, source text NOT NULL,
                repeated boolean NOT NULL DEFAULT false
            ) ON COMMIT DROP"""
        )
    staged, grouped = _stage_rows(batch, schema, report, progress)
    _check_ids(batch, schema.as_row_schema(), report, policy, staged)
    batch.rows_total = batch.rows_done = report.rows_total
    batch.bytes_done = batch.file_size
    if not report.ok:
        raise StagedRejected(report, report.summary())
    if report.sha256 != batch.sha256:
        raise StagedRejected(
            report, "The stored file no longer matches the upload (SHA-256); upload it again."
        )
    if report.rows_total == 0:
        raise StagedRejected(report, f"{batch.filename} holds no rows: there is nothing to import.")
    batch.status = ImportBatch.Status.WRITING
    batch.validated_at = timezone.now()
    progress.save(
        force=True, status=batch.status, validated_at=batch.validated_at,
        rows_total=batch.rows_total, rows_done=batch.rows_done, bytes_done=batch.bytes_done,
    )  # fmt: skip
    created = 0
    if report.rows_create:
        with _foreign_keys_checked_once((Project, batch.project_id)):
            created = _insert_new(batch, known=report.rows_update > 0)
    if created != report.rows_create:
        # Another import added some of these ids after the check above (the INSERT's own
        # snapshot skips them): never drop a row of the file in silence.
        raise StagedRejected(report, _ADDED_MEANWHILE)
    updated = _revise_changed(batch) if report.rows_update else 0
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {_quote(STAGING_TABLE)}")
    if created:
        _open_created(batch, grouped=grouped)
        services.planner_statistics_refresh(Item, ItemStage)
    return report, created, updated


def _stage_rows(
    batch: ImportBatch, schema: MappedSchema, report: ImportReport, progress: Any
) -> tuple[int, bool]:
    """Step 1: read the file once, COPY every row that passes its own checks into the staging
    table; return how many were staged and whether any of them has a group."""
    options = batch.options or {}
    default_source = batch.filename[:200]
    # PostgreSQL reads the text as jsonb, whatever its spelling: orjson, several times faster
    # than the standard library's encoder, which takes the integers beyond 64 bits it refuses.
    standard_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def dumps(payload: dict[str, Any]) -> str:
        try:
            return orjson.dumps(payload).decode()
        except TypeError:
            return standard_dumps(payload)

    columns = "n, line, idx, col, external_id, payload, grp, purpose, source"
    staged = 0
    grouped = False
    with batch.file.open("rb") as handle:

        def on_rows(rows: int) -> None:
            progress.save(rows_done=rows, bytes_done=min(handle.tell(), batch.file_size))

        rows = iter_checked_rows(
            handle,
            fmt=batch.format,
            schema=schema.as_row_schema(),
            report=report,
            progress=on_rows,
            filename=batch.filename,
            array_key=options.get("array_key"),
        )
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {_quote(STAGING_TABLE)} ({columns}) FROM STDIN") as copy:
                write_row = copy.write_row
                for row, column in rows:
                    fields = schema.mapped
                    assert fields is not None  # set by the check that accepted the row
                    staged += 1
                    if fields.group:
                        grouped = True
                    write_row(
                        (staged, row.line, row.index, column, row.external_id,
                         dumps(fields.payload), fields.group, fields.purpose,
                         fields.source or default_source)
                    )  # fmt: skip
            cursor.execute(f"ANALYZE {_quote(STAGING_TABLE)}")
    return staged, grouped


def _check_ids(
    batch: ImportBatch, schema: RowSchema, report: ImportReport, policy: str, staged: int
) -> None:
    """Step 2: ids repeated in the file, and ids already in the project, found by SQL; their
    errors merged into ``report`` by line; ``rows_ok`` / ``rows_create`` / ``rows_update``
    counted."""
    cap = report.error_cap
    staging = _quote(STAGING_TABLE)
    found: list[tuple[tuple[Any, ...], RowError]] = []
    extra_errors = 0
    with connection.cursor() as cursor:
        # Hand-written SQL: the staging table is no model. Every repeat of an id after its
        # first row is marked, then the first ``cap`` repeats are listed with their first line.
        cursor.execute(
            f"""WITH firsts AS (
                    SELECT external_id, min(n) AS first_n FROM {staging}
                    GROUP BY external_id HAVING count(*) > 1
                )
                UPDATE {staging} s SET repeated = true FROM firsts f
                WHERE s.external_id = f.external_id AND s.n > f.first_n"""
        )
        repeated = cursor.rowcount
        if repeated:
            cursor.execute(
                f"""SELECT s.n, s.line, s.idx, s.col, s.external_id, f.line
                    FROM (SELECT * FROM {staging} WHERE repeated ORDER BY n LIMIT %(cap)s) s
                    JOIN {staging} f ON f.external_id = s.external_id AND NOT f.repeated
                    ORDER BY s.n""",
                {"cap": cap},
            )
            for n, line, index, column, external_id, first_line in cursor.fetchall():
                error = duplicate_in_file_error(
                    schema, external_id, line, first_line, index, column
                )
                found.append(((n,), error))
            extra_errors += repeated
        # The ids of the file's first rows that the project already has.
        cursor.execute(
            f"""SELECT count(*) FROM {staging} s
                JOIN {_quote(Item._meta.db_table)} i
                  ON i.{_item_column("project")} = %(project)s
                 AND i.{_item_column("external_id")} = s.external_id
                WHERE NOT s.repeated""",
            {"project": batch.project_id},
        )
        existing = cursor.fetchone()[0]
        if existing and policy == "reject":
            cursor.execute(
                f"""SELECT s.n, s.line, s.idx, s.external_id FROM {staging} s
                    JOIN {_quote(Item._meta.db_table)} i
                      ON i.{_item_column("project")} = %(project)s
                     AND i.{_item_column("external_id")} = s.external_id
                    WHERE NOT s.repeated ORDER BY s.n LIMIT %(cap)s""",
                {"project": batch.project_id, "cap": cap},
            )
            for n, line, index, external_id in cursor.fetchall():
                found.append(((n,), duplicate_existing_error(schema, external_id, line, index)))
            extra_errors += existing
    if found:
        _merge_errors(report, [error for _, error in found], extra_errors)
    accepted = staged - repeated - (existing if policy == "reject" else 0)
    report.rows_ok = accepted
    report.rows_update = existing if policy == "update" else 0
    report.rows_create = accepted - report.rows_update


def _merge_errors(report: ImportReport, errors: list[RowError], count: int) -> None:
    """Merge ``errors`` (the first of ``count`` found by SQL) with the report's own, in file
    order (line, then element), keeping the first ``error_cap``."""

    def place(error: RowError) -> tuple[bool, int, int]:
        return (error.line is None, error.line or 0, -1 if error.index is None else error.index)

    merged = sorted([*report.errors, *errors], key=place)  # stable: equal places keep order
    report.errors = merged[: report.error_cap]
    report.error_count += count


def _insert_new(batch: ImportBatch, *, known: bool) -> int:
    """Step 4: the staged rows whose ids are new to the project, as items, in file order.
    ``known``: some staged ids are already in the project (policy "update"); when none are,
    the statement does not look each id up again: an id another import added meanwhile breaks
    the unique constraint, and the import is refused, keeping nothing."""
    table = _quote(Item._meta.db_table)
    columns = ", ".join(_item_column(name) for name in _ITEM_COLUMNS)
    new_only = (
        f"""AND NOT EXISTS (
            SELECT 1 FROM {table} i
            WHERE i.{_item_column("project")} = %(project)s
              AND i.{_item_column("external_id")} = s.external_id)"""
        if known
        else ""
    )
    with connection.cursor() as cursor:
        try:
            cursor.execute(
                f"""INSERT INTO {table} ({columns})
                    SELECT %(project)s, s.external_id, s.payload, s.source, s.grp, s.purpose,
                           %(batch)s, %(status)s, 1, %(now)s
                    FROM {_quote(STAGING_TABLE)} s
                    WHERE NOT s.repeated {new_only}
                    ORDER BY s.n""",
                {"project": batch.project_id, "batch": batch.pk,
                 "status": Item.Status.ACTIVE.value, "now": timezone.now()},
            )  # fmt: skip
        except IntegrityError:
            # Another import added one of these ids after the check above and committed.
            raise StagedRejected(ImportReport(fmt=batch.format), _ADDED_MEANWHILE) from None
        return cursor.rowcount


def _revise_changed(batch: ImportBatch) -> int:
    """Step 4, policy "update": a revision for each existing item whose content differs from
    its row's (compared as jsonb); refused, keeping nothing, when one of them is being
    annotated."""
    staging = _quote(STAGING_TABLE)
    table = _quote(Item._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT s.line, s.idx, i.{_item_column("id")}, s.payload::text FROM {staging} s
                JOIN {table} i ON i.{_item_column("project")} = %(project)s
                              AND i.{_item_column("external_id")} = s.external_id
                WHERE NOT s.repeated AND s.payload IS DISTINCT FROM i.{_item_column("payload")}
                ORDER BY s.n""",
            {"project": batch.project_id},
        )
        changes = cursor.fetchall()
    updated = 0
    for start in range(0, len(changes), UPDATE_CHUNK):
        chunk = changes[start : start + UPDATE_CHUNK]
        items = Item.objects.in_bulk([item_id for _, _, item_id, _ in chunk])
        busy = services.items_with_open_work(list(items))
        if busy:
            report = ImportReport(fmt=batch.format)
            for line, index, item_id, _ in chunk:
                if item_id in busy:
                    external_id = items[item_id].external_id
                    report.add_error(
                        RowError(
                            line=line, index=index, field="id", code="open_work",
                            found=external_id,
                            message=f"{external_id} is being annotated in "
                            f"{', '.join(busy[item_id])}; update it when that work is resolved, "
                            f"so that no vote mixes judgements of two versions.",
                        )
                    )  # fmt: skip
            raise StagedRejected(
                report,
                f"Nothing was imported: {len(busy):,} items to update are being annotated "
                f"({report.errors[0]}).",
            )
        for line, _, item_id, payload in chunk:
            services.item_revise(
                item=items[item_id],
                payload=json.loads(payload),
                author=batch.created_by,
                reason=f"import #{batch.pk} ({batch.filename}, line {line})",
            )
            updated += 1
    return updated


def _open_created(batch: ImportBatch, *, grouped: bool) -> None:
    """Start work on the items ``batch`` created: the workflow's ``open_items`` when it has one
    (annotation/workflows.py), else open them in the project's first active stage (without
    group ranks when no row of the file had a group: ``grouped`` False)."""
    project = batch.project
    created = Item.objects.filter(import_batch=batch)
    workflow = WORKFLOWS.get(project.kind)
    if workflow is not None and workflow.open_items is not None:
        workflow.open_items(project=project, items=created)
        return
    first_stage = project.stages.filter(is_active=True).order_by("position").first()
    if first_stage is not None:
        # The items were created by this transaction and are in no stage yet (new_items).
        with _foreign_keys_checked_once((Stage, first_stage.pk)):
            services.item_stages_open(
                items=created, stage=first_stage, new_items=True, ungrouped=not grouped
            )


@contextmanager
def _foreign_keys_checked_once(*references: tuple[type[Model], int]) -> Iterator[None]:
    """Run the block's statements without PostgreSQL's per-row foreign-key checks, after
    checking once what they would check for every row (the engine's
    ``services.foreign_keys_checked_once``, its contract and its fallback).

    Precondition (the caller's promise): every foreign key the block writes is NULL, one of
    ``references`` (a model and a primary key, the same row for every row written), or a row
    this transaction wrote itself. Each reference is locked ``FOR KEY SHARE`` as the per-row
    check would lock it; a missing one refuses the import (``StagedRejected``)."""

    def check(cursor: Any) -> None:
        for model, pk in references:
            if not services.row_locked_for_key_share(cursor, model, pk):
                raise StagedRejected(ImportReport(), _REMOVED_MEANWHILE)

    with services.foreign_keys_checked_once(check):
        yield
