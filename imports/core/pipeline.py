"""Check a whole import file, then hand out its clean rows in batches.

The intended use is two passes over a file kept on disk:

1. ``report = validate_stream(f, fmt=..., schema=..., duplicate_policy=..., existing_ids=...)``
   reads everything and returns an ``ImportReport`` (counts, capped located errors, SHA-256).
   Nothing is written.
2. Only if ``report.ok``: inside one database transaction,
   ``for batch in iter_clean_batches(f2, ..., expected_sha256=report.sha256): bulk-write(batch)``.
   The second pass repeats every check; should the file have changed, or an id turned up in the
   project meanwhile (policy "reject"), it raises ``ImportRejected`` part way, which must roll
   the transaction back — so never commit batch by batch.

Memory: one batch of rows plus a map from each external id seen to its line, i.e. bounded by the
number of distinct ids in the file, not by payload size (about 100 bytes per id).

A caller that checks ids across rows itself, set-based, reads the file once with
``iter_checked_rows`` instead (imports/services/staged.py: the PostgreSQL staging import); its
memory does not grow with the file.

``existing_ids`` is either a collection of the ids already in the project, or a callable that
receives a list of up to ``lookup_batch_size`` ids and returns those of them that exist (one
``WHERE external_id IN (...)`` query per batch).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

from imports.core.readers import ImportFileError, RawRecord, RecordReader
from imports.core.report import ImportReport, RowError
from imports.core.schema import RowSchema

DuplicatePolicy = Literal["reject", "update"]
ExistingIds = Callable[[Sequence[str]], Collection[str]] | Collection[str] | None
DUPLICATE_POLICIES = ("reject", "update")
LOOKUP_BATCH_SIZE = 1000


@dataclass(frozen=True, slots=True)
class CleanRow:
    """A validated row: ``data`` is the clean payload (it includes the external id field);
    ``action`` is "create" or, with the policy "update" and an id already in the project,
    "update"."""

    external_id: str
    data: dict[str, Any]
    line: int
    index: int | None
    action: Literal["create", "update"]


class ImportRejected(Exception):
    """The second pass found a problem; ``report`` holds it. Roll the transaction back."""

    def __init__(self, report: ImportReport, reason: str) -> None:
        super().__init__(reason)
        self.report = report
        self.reason = reason


def _lookup(existing_ids: ExistingIds) -> Callable[[Sequence[str]], Collection[str]]:
    if existing_ids is None:
        return lambda ids: ()
    if callable(existing_ids):
        return existing_ids
    known = existing_ids
    return lambda ids: [identifier for identifier in ids if identifier in known]


def _scan(
    fileobj: IO[bytes],
    *,
    fmt: str | None,
    schema: RowSchema,
    duplicate_policy: DuplicatePolicy,
    existing_ids: ExistingIds,
    report: ImportReport,
    progress: Callable[[int], None] | None,
    filename: str | None,
    array_key: str | None,
    batch_size: int,
) -> Iterator[list[CleanRow]]:
    """Read, validate and de-duplicate; fill ``report``; yield accepted rows batch by batch."""
    if duplicate_policy not in DUPLICATE_POLICIES:
        raise ValueError(f"duplicate_policy must be one of {DUPLICATE_POLICIES}")
    lookup = _lookup(existing_ids)
    reader = RecordReader(
        fileobj,
        fmt=fmt,
        filename=filename,
        array_key=array_key,
        header_check=lambda columns: schema.check_columns(columns),
    )
    report.fmt = reader.fmt
    first_line_of: dict[str, int] = {}
    # Each slot is a CleanRow or the errors of one record, in file order, so that errors found
    # late (ids already in the project) still come out in line order.
    pending: list[CleanRow | list[RowError]] = []
    pending_ids: list[str] = []

    def flush() -> list[CleanRow]:
        existing = set(lookup(pending_ids)) if pending_ids else set()
        accepted = []
        for slot in pending:
            if isinstance(slot, list):
                for error in slot:
                    report.add_error(error)
                continue
            if slot.external_id in existing:
                if duplicate_policy == "reject":
                    report.add_error(_existing_error(schema, slot))
                    continue
                slot = CleanRow(slot.external_id, slot.data, slot.line, slot.index, "update")
                report.rows_update += 1
            else:
                report.rows_create += 1
            report.rows_ok += 1
            accepted.append(slot)
        pending.clear()
        pending_ids.clear()
        if progress is not None:
            progress(report.rows_total)
        return accepted

    try:
        for record in reader:
            report.rows_total += 1
            pending.append(
                _check_record(record, schema, first_line_of, pending_ids, report.rows_total)
            )
            if len(pending) >= batch_size:
                yield flush()
    except ImportFileError as problem:
        report.fatal = True
        yield flush()
        for error in problem.errors:
            report.add_error(error)
    else:
        yield flush()
    finally:
        reader.finish()
        report.sha256 = reader.sha256
        report.bytes_read = reader.bytes_read
        report.columns = list(reader.columns)
        report.wrapper_key = reader.wrapper_key


def _check_record(
    record: RawRecord,
    schema: RowSchema,
    first_line_of: dict[str, int],
    pending_ids: list[str],
    number: int,
) -> CleanRow | list[RowError]:
    if record.error is not None:
        return [record.error]
    clean, errors = schema.validate_row(
        record.data,
        record.line,
        index=record.index,
        column=record.column,
        text_values=record.text_values,
    )
    if clean is None:
        return errors
    external_id = schema.row_id(clean, number)
    first_line = first_line_of.get(external_id)
    if first_line is not None:
        return [
            duplicate_in_file_error(
                schema, external_id, record.line, first_line, record.index, record.column
            )
        ]
    first_line_of[external_id] = record.line
    pending_ids.append(external_id)
    return CleanRow(external_id, clean, record.line, record.index, "create")


def duplicate_in_file_error(
    schema: RowSchema,
    external_id: str,
    line: int | None,
    first_line: int | None,
    index: int | None = None,
    column: int | None = None,
) -> RowError:
    """The error of a row whose id an earlier row of the file (``first_line``) already has."""
    return RowError(
        line=line,
        index=index,
        column=column,
        field=schema.external_id_field,
        code="duplicate_in_file",
        expected="an id not used earlier in the file",
        found=repr(external_id),
        message=(
            f"This row repeats line {first_line} exactly (its id {external_id} comes "
            f"from its content); remove one of the two."
            if schema.derived_id == "content"
            else f'The id "{external_id}" is used on line {first_line} and again on '
            f"line {line}; each id may appear only once in a file. Remove or "
            f"rename one of the two."
        ),
    )


def duplicate_existing_error(
    schema: RowSchema, external_id: str, line: int | None, index: int | None = None
) -> RowError:
    """The error of a row whose id is already in the project (duplicate policy "reject")."""
    return RowError(
        line=line,
        index=index,
        field=schema.external_id_field,
        code="duplicate_existing",
        expected="an id not yet in the project",
        found=repr(external_id),
        message=(
            f'The id "{external_id}" is already in this project; remove the row, give it a '
            f'new id, or import with the duplicate policy "update" to replace the stored item.'
        ),
    )


def _existing_error(schema: RowSchema, row: CleanRow) -> RowError:
    return duplicate_existing_error(schema, row.external_id, row.line, row.index)


def validate_stream(
    fileobj: IO[bytes],
    *,
    fmt: str | None,
    schema: RowSchema,
    duplicate_policy: DuplicatePolicy = "reject",
    existing_ids: ExistingIds = None,
    progress: Callable[[int], None] | None = None,
    error_cap: int = 100,
    filename: str | None = None,
    array_key: str | None = None,
    lookup_batch_size: int = LOOKUP_BATCH_SIZE,
) -> ImportReport:
    """First pass: check every row of a binary file object; write nothing.

    ``fmt`` is "csv", "jsonl", "json" or None (detect from ``filename`` and content).
    ``progress(rows_read)`` is called after every ``lookup_batch_size`` rows and at the end.
    Duplicate ids inside the file are errors whatever the policy; ids already in the project
    are errors with "reject" and counted as ``rows_update`` with "update".
    """
    report = ImportReport(error_cap=error_cap)
    for _batch in _scan(
        fileobj,
        fmt=fmt,
        schema=schema,
        duplicate_policy=duplicate_policy,
        existing_ids=existing_ids,
        report=report,
        progress=progress,
        filename=filename,
        array_key=array_key,
        batch_size=lookup_batch_size,
    ):
        pass
    return report


def iter_clean_batches(
    fileobj: IO[bytes],
    *,
    fmt: str | None,
    schema: RowSchema,
    duplicate_policy: DuplicatePolicy = "reject",
    existing_ids: ExistingIds = None,
    batch_size: int = LOOKUP_BATCH_SIZE,
    expected_sha256: str | None = None,
    filename: str | None = None,
    array_key: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[list[CleanRow]]:
    """Second pass: yield the clean rows in lists of at most ``batch_size``.

    Raises ``ImportRejected`` as soon as any error appears, and after the last batch when the
    file's SHA-256 differs from ``expected_sha256`` (the digest of the validated file). Run it
    inside the transaction that writes the rows.
    """
    report = ImportReport(error_cap=10)
    for batch in _scan(
        fileobj,
        fmt=fmt,
        schema=schema,
        duplicate_policy=duplicate_policy,
        existing_ids=existing_ids,
        report=report,
        progress=progress,
        filename=filename,
        array_key=array_key,
        batch_size=batch_size,
    ):
        if report.error_count:
            raise ImportRejected(report, f"the file has errors: {report.errors[0]}")
        if batch:
            yield batch
    if report.error_count or report.fatal:
        raise ImportRejected(report, f"the file has errors: {report.errors[0]}")
    if expected_sha256 is not None and report.sha256 != expected_sha256:
        raise ImportRejected(
            report,
            "the file changed since it was validated (SHA-256 differs); validate it again",
        )


def iter_checked_rows(
    fileobj: IO[bytes],
    *,
    fmt: str | None,
    schema: RowSchema,
    report: ImportReport,
    progress: Callable[[int], None] | None = None,
    progress_every: int = LOOKUP_BATCH_SIZE,
    filename: str | None = None,
    array_key: str | None = None,
) -> Iterator[tuple[CleanRow, int | None]]:
    """One pass for a caller that checks ids across rows itself, set-based (the PostgreSQL
    staging import, ``imports.services.staged``): read and check every record against
    ``schema`` and yield each row that passed, in file order, as ``(row, column)`` (``row`` with
    its id and ``action`` "create", ``column`` where a JSON array's element starts); every problem of a single record goes to ``report`` in line order.

    Unlike ``validate_stream`` it neither looks ids up nor remembers them, so its memory does
    not grow with the file: ids repeated in the file or already in the project are the
    caller's to find (``duplicate_in_file_error`` and ``duplicate_existing_error`` word them
    as the two-pass pipeline does). ``report.rows_total``, ``fatal``, ``sha256``,
    ``bytes_read``, ``columns`` and ``wrapper_key`` are filled as by ``validate_stream``;
    ``rows_ok`` / ``rows_create`` are left to the caller, who knows which rows survive.
    ``progress(rows_read)`` is called every ``progress_every`` records and at the end.
    """
    reader = RecordReader(
        fileobj,
        fmt=fmt,
        filename=filename,
        array_key=array_key,
        header_check=lambda columns: schema.check_columns(columns),
    )
    report.fmt = reader.fmt
    validate = schema.validate_row
    row_id = schema.row_id
    add_error = report.add_error
    total = 0
    try:
        for record in reader:
            total += 1
            if progress is not None and total % progress_every == 0:
                report.rows_total = total
                progress(total)
            if record.error is not None:
                add_error(record.error)
                continue
            clean, errors = validate(
                record.data,
                record.line,
                index=record.index,
                column=record.column,
                text_values=record.text_values,
            )
            if clean is None:
                for error in errors:
                    add_error(error)
                continue
            row = CleanRow(row_id(clean, total), clean, record.line, record.index, "create")
            yield row, record.column
    except ImportFileError as problem:
        report.fatal = True
        for error in problem.errors:
            add_error(error)
    finally:
        report.rows_total = total
        reader.finish()
        report.sha256 = reader.sha256
        report.bytes_read = reader.bytes_read
        report.columns = list(reader.columns)
        report.wrapper_key = reader.wrapper_key
    if progress is not None:
        progress(total)
