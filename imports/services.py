"""Imports of candidate items: upload → validate every row → write all rows in one transaction.

One module (about 760 lines) for the import batch's life cycle, from upload to progress to
the written items; each step reads the batch's state the previous one left.

The Django side of ``imports.core`` (the pure, streaming core). One ImportBatch per
uploaded file keeps the file (MEDIA_ROOT), its SHA-256, counts, progress and row-level errors.

Flow (``import_batch_create`` then ``import_batch_run``):

1. The upload is saved to ``ImportBatch.file`` and hashed while it is copied.
2. Pass 1, ``validate_stream``: every row is checked against the project kind's import schema
   (``imports.core.schema.schema_for_kind``) and ids are looked up in the project, batch by
   batch. Progress (bytes and rows checked) is saved every ``PROGRESS_EVERY_SECONDS`` at most.
   Any problem: the batch fails with every error located (capped list, true count); nothing is
   written.
3. Pass 2, ``iter_clean_batches`` inside ONE ``transaction.atomic``: items are bulk-created in
   batches and opened in the project's first active stage; with the duplicate policy "update",
   existing items get a revision (``services.item_revise``) when their content changed. Should
   the second pass find anything (the file changed, an id appeared meanwhile), the transaction
   rolls back and the batch fails: a failed import keeps nothing.

Small files are run inline by the caller; larger ones (``settings.RUNGWISE_IMPORT_INLINE_MAX_BYTES``)
by the Celery task ``imports.tasks.run_import``, which calls ``import_batch_run`` and is safe
to run twice (a batch already finished is left alone).

Plug-in points for project kinds
--------------------------------
* ``imports.core.schema.register_schema(kind, RowSchema(...))`` — the rows a kind accepts.
* ``register_item_mapper(kind, mapper)`` — how a clean row becomes an item: ``mapper(clean,
  schema, options) -> ItemFields``. The default puts every field but the external id into the
  payload, and takes the item's group / purpose / source from the columns named by the batch
  options ``group_field`` / ``purpose_field`` / ``source_field`` when given.
* Layout ``"release"``: the rows of a Rungwise release (``items.jsonl``), whose item content is
  under ``"payload"``; re-importing a release reproduces its items (the round trip).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import connection, connections, transaction
from django.db.models import Q
from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotation import services
from annotation.errors import ApplicationError, Conflict
from annotation.models import Item, ItemStage, Project
from annotation.values import shown
from imports.core import (
    FieldSpec,
    ImportRejected,
    ImportReport,
    RowError,
    RowSchema,
    iter_clean_batches,
    schema_for_kind,
    validate_stream,
)
from imports.core.pipeline import DUPLICATE_POLICIES, CleanRow
from imports.core.readers import EXTENSIONS, FORMATS
from imports.models import ImportBatch

logger = logging.getLogger(__name__)

ERROR_CAP = 200
WRITE_BATCH_SIZE = 1000
PROGRESS_EVERY_SECONDS = 0.5
LAYOUTS = ("rows", "release")
#: A batch left VALIDATING/WRITING longer than this was abandoned by a dead worker; the pass-2
#: transaction died with it, so running it again is safe.
STALE_AFTER = timedelta(seconds=getattr(settings, "CELERY_TASK_TIME_LIMIT", 900) + 60)
MAX_FILENAME = 255
# Control characters and unpaired surrogates: never part of a file or column name.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def inline_max_bytes() -> int:
    return int(getattr(settings, "RUNGWISE_IMPORT_INLINE_MAX_BYTES", 1 << 20))


def upload_max_bytes() -> int:
    """The largest file any import takes (``settings.RUNGWISE_UPLOAD_MAX_BYTES``)."""
    return int(settings.RUNGWISE_UPLOAD_MAX_BYTES)


# --- How a clean row becomes an item ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ItemFields:
    """What an import row contributes to an Item."""

    payload: dict[str, Any]
    group: str = ""
    purpose: str = Item.Purpose.REGULAR
    source: str = ""


ItemMapper = Callable[[dict[str, Any], RowSchema, Mapping[str, Any]], ItemFields]
ITEM_MAPPERS: dict[str, ItemMapper] = {}


def register_item_mapper(kind: str, mapper: ItemMapper) -> None:
    """Declare how a project kind turns a clean import row into item fields (see module doc)."""
    ITEM_MAPPERS[kind] = mapper


def _text_option(clean: Mapping[str, Any], name: str | None) -> str:
    if not name:
        return ""
    value = clean.get(name)
    return "" if value is None else str(value)


def default_item_mapper(
    clean: dict[str, Any], schema: RowSchema, options: Mapping[str, Any]
) -> ItemFields:
    payload = {key: value for key, value in clean.items() if key != schema.external_id_field}
    purpose = _text_option(clean, options.get("purpose_field")) or Item.Purpose.REGULAR
    return ItemFields(
        payload=payload,
        group=_text_option(clean, options.get("group_field"))[:200],
        purpose=purpose,
        source=_text_option(clean, options.get("source_field"))[:200]
        or str(options.get("source") or "")[:200],
    )


class _ReleaseRowSchema(RowSchema):
    """A release line: item content is an object under "payload"."""

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean, errors = super().validate_row(
            raw, line, index=index, column=column, text_values=text_values
        )
        if clean is not None and not isinstance(clean.get("payload"), dict):
            where = {"line": line, "index": index, "column": column}
            return None, [
                RowError(
                    **where,
                    field="payload",
                    code="wrong_type",
                    expected="an object ({...}) holding the item's fields",
                    found=repr(clean.get("payload"))[:80],
                    message='Field "payload" must be a JSON object holding the item\'s fields.',
                )
            ]
        return clean, errors


RELEASE_ROW_SCHEMA = _ReleaseRowSchema(
    name="rungwise-release",
    description="The items.jsonl of a Rungwise release: item content under payload.",
    external_id_field="external_id",
    extra_fields="ignore",
    fields=(
        FieldSpec("external_id", "str", required=True, max_length=200),
        FieldSpec("payload", "json", required=True, help="The item's content."),
        FieldSpec("group", "str", max_length=200),
        FieldSpec(
            "purpose", "choice", choices=tuple(Item.Purpose.values), default=Item.Purpose.REGULAR
        ),
        FieldSpec("source", "str", max_length=200),
    ),
)


def _release_item_mapper(
    clean: dict[str, Any], schema: RowSchema, options: Mapping[str, Any]
) -> ItemFields:
    return ItemFields(
        payload=dict(clean["payload"]),
        group=clean.get("group") or "",
        purpose=clean.get("purpose") or Item.Purpose.REGULAR,
        source=clean.get("source") or "",
    )


@dataclass(frozen=True)
class _ShownFieldsSchema(RowSchema):
    """The generic schema of a project whose stages show annotators only some payload fields:
    a row must hold at least one of them (``shown``), or annotators would see an empty item."""

    shown: tuple[str, ...] = ()

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean, errors = super().validate_row(
            raw, line, index=index, column=column, text_values=text_values
        )
        if clean is not None and not any(clean.get(name) not in (None, "") for name in self.shown):
            return None, [
                RowError(
                    line=line,
                    index=index,
                    column=column,
                    field=None,
                    code="nothing_shown",
                    expected="one of: " + ", ".join(self.shown),
                    message="The row has none of the fields this project's stages show "
                    f"annotators ({', '.join(self.shown)}): they would see an empty item.",
                )
            ]
        return clean, errors


def shown_fields(project: Project) -> tuple[str, ...]:
    """The payload fields the project's active stages show annotators (their kinds'
    allow-lists), in pipeline order; empty when the project has no stages yet."""
    from annotation.kinds import KindContext, get_kind

    names: list[str] = []
    for stage in project.stages.filter(is_active=True).order_by("position"):
        for name in get_kind(stage.kind).visible_fields(KindContext(stage=stage)):
            if name not in names:
                names.append(name)
    return tuple(names)


def import_schema(project: Project, layout: str) -> RowSchema:
    """The schema rows of ``project`` are checked against: the release layout's, the project
    kind's, or — for kinds without their own — the generic one requiring one of the fields the
    stages show (``shown_fields``)."""
    if layout == "release":
        return RELEASE_ROW_SCHEMA
    schema = schema_for_kind(project.kind)
    shown = shown_fields(project) if schema.name == "generic" else ()
    if not shown:
        return schema
    return _ShownFieldsSchema(
        name=schema.name,
        fields=schema.fields,
        external_id_field=schema.external_id_field,
        extra_fields=schema.extra_fields,
        description=schema.description,
        shown=shown,
    )


def sample_rows(project: Project) -> tuple[list[str], list[dict[str, Any]]]:
    """A sample file's columns and two rows for ``project``'s import (the import page offers it
    as a download): the schema's fields, or the id and the fields the stages show."""
    schema = schema_for_kind(project.kind)
    if schema.name == "generic":
        shown = [name for name in shown_fields(project) if name != "options"][:2] or ["text"]
        columns = [schema.external_id_field, *shown]
    else:
        columns = [spec.name for spec in schema.fields]
    examples = {
        "int": "3",
        "float": "0.5",
        "bool": "true",
        "json": "{}",
        "list[str]": "first;second",
    }
    rows = []
    for number in (1, 2):
        row = {}
        for name in columns:
            spec = next((f for f in schema.fields if f.name == name), None)
            if name == schema.external_id_field:
                row[name] = f"item-{number:03d}"
            elif spec is not None and spec.type == "choice":
                row[name] = spec.choices[0]
            elif spec is not None and spec.type in examples:
                row[name] = examples[spec.type]
            else:
                row[name] = f"Example {name.replace('_', ' ')} {number}."
        rows.append(row)
    return columns, rows


def _mapper(project: Project, layout: str) -> ItemMapper:
    if layout == "release":
        return _release_item_mapper
    return ITEM_MAPPERS.get(project.kind, default_item_mapper)


def map_row(
    clean: dict[str, Any], schema: RowSchema, mapper: ItemMapper, options: Mapping[str, Any]
) -> ItemFields:
    """Run a mapper and check what it gives; ValueError carries a message for the row."""
    fields = mapper(clean, schema, options)
    if fields.purpose not in Item.Purpose.values:
        raise ValueError(
            f"The purpose {fields.purpose!r} is not one of {', '.join(Item.Purpose.values)}."
        )
    if not isinstance(fields.payload, dict):
        raise ValueError("The item content must be an object.")
    return fields


class _MappedSchema:
    """The import schema plus the kind's item mapper, so that pass 1 also catches rows the
    mapper refuses (``ValueError``): every problem is reported before anything is written."""

    def __init__(self, schema: RowSchema, mapper: ItemMapper, options: Mapping[str, Any]):
        self._schema, self._mapper, self._options = schema, mapper, options

    def __getattr__(self, name: str) -> Any:
        return getattr(self._schema, name)

    def validate_row(self, raw, line, *, index=None, column=None, text_values=False):
        clean, errors = self._schema.validate_row(
            raw, line, index=index, column=column, text_values=text_values
        )
        if clean is None:
            return clean, errors
        try:
            map_row(clean, self._schema, self._mapper, self._options)
        except ValueError as problem:
            return None, [
                RowError(
                    line=line,
                    index=index,
                    column=column,
                    code="wrong_type",
                    expected="a row the project kind accepts",
                    found=repr(raw)[:80],
                    message=str(problem),
                )
            ]
        return clean, errors


# --- Creating a batch from an upload ------------------------------------------------------


def _format_for(filename: str, fmt: str | None) -> str:
    if fmt:
        if fmt not in FORMATS:
            raise ApplicationError(
                f"Unknown file format {fmt!r}; use one of {', '.join(FORMATS)}.", {"format": fmt}
            )
        return fmt
    extension = Path(filename).suffix.lower()
    if extension not in EXTENSIONS:
        raise ApplicationError(
            f"Cannot tell the format of {filename!r} from its name; name it .csv, .jsonl or "
            f".json, or choose the format.",
            {"format": "csv, jsonl or json"},
        )
    return EXTENSIONS[extension]


def _clean_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    options = dict(options or {})
    policy = options.get("duplicate_policy") or "reject"
    if policy not in DUPLICATE_POLICIES:
        raise ApplicationError(
            f'Unknown duplicate policy {policy!r}: choose "reject" (ids already in the project '
            f'are errors) or "update" (they replace the stored items).',
            {"duplicate_policy": list(DUPLICATE_POLICIES)},
        )
    layout = options.get("layout") or "rows"
    if layout not in LAYOUTS:
        raise ApplicationError(
            f"Unknown layout {layout!r}; use one of {', '.join(LAYOUTS)}.",
            {"layout": list(LAYOUTS)},
        )
    clean = {"duplicate_policy": policy, "layout": layout}
    for key in ("group_field", "purpose_field", "source_field", "source", "array_key"):
        value = options.get(key)
        if value not in (None, ""):
            if not isinstance(value, str) or len(value) > 200:
                raise ApplicationError(f"Option {key} must be a short text.", {key: "text"})
            if _CONTROL.search(value):
                # The options are stored as JSON, which PostgreSQL refuses with a NUL inside.
                raise ApplicationError(
                    f"Option {key} holds an invisible control character ({shown(value, 40)}); "
                    f"type the column name again.",
                    {key: "control character"},
                )
            clean[key] = value
    return clean


@transaction.atomic
def import_batch_create(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    fileobj: IO[bytes],
    filename: str,
    fmt: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> ImportBatch:
    """Store an uploaded file as a pending ImportBatch (file saved, SHA-256 and size recorded).

    ``options``: ``duplicate_policy`` ("reject" | "update"), ``layout`` ("rows" | "release"),
    and for the default item mapper ``group_field``, ``purpose_field``, ``source_field``,
    ``source``. Run it with ``import_batch_start``.
    """
    filename = os.path.basename(str(filename or "").replace("\\", "/"))
    filename = _CONTROL.sub("", filename)[:MAX_FILENAME]
    if not filename:
        raise ApplicationError("Choose a file to import.", {"file": "required"})
    fmt = _format_for(filename, fmt)
    clean_options = _clean_options(options)
    if clean_options["layout"] == "release" and fmt == "csv":
        raise ApplicationError(
            "A release is re-imported from its items.jsonl; CSV keeps no types, so it cannot "
            "reproduce the items exactly.",
            {"layout": "release needs JSON Lines or JSON"},
        )
    digest = hashlib.sha256()
    size = 0

    class _Hashing:
        """Hash the upload while the storage copies it."""

        def __init__(self, raw: IO[bytes]) -> None:
            self.raw = raw

        def read(self, n: int = -1) -> bytes:
            nonlocal size
            data = self.raw.read(n)
            if isinstance(data, str):
                raise ApplicationError("The upload must be binary.", {"file": "binary"})
            digest.update(data)
            size += len(data)
            if size > limit:  # a stream that did not say its size
                raise ApplicationError(
                    f"{filename} is larger than {limit / 1e6:,.0f} MB, the most an import takes "
                    f"(RUNGWISE_UPLOAD_MAX_BYTES). Split the file.",
                    {"file": "too large", "max_bytes": limit},
                    status=413,
                )
            return data

        def __getattr__(self, name):
            return getattr(self.raw, name)

    limit = upload_max_bytes()
    declared = getattr(fileobj, "size", None)
    if declared is None and hasattr(fileobj, "seek") and hasattr(fileobj, "tell"):
        declared = fileobj.seek(0, os.SEEK_END)
    if declared is not None and declared > limit:
        raise ApplicationError(
            f"{filename} is {declared / 1e6:,.1f} MB; imports take at most "
            f"{limit / 1e6:,.0f} MB (RUNGWISE_UPLOAD_MAX_BYTES). Split the file.",
            {"file": "too large", "max_bytes": limit},
            status=413,
        )
    if hasattr(fileobj, "seek"):
        fileobj.seek(0)
    batch = ImportBatch(
        project=project,
        created_by=user if user is not None and user.is_authenticated else None,
        filename=filename,
        format=fmt,
        options=clean_options,
    )
    batch.file.save(filename, File(_Hashing(fileobj), name=filename), save=False)
    if size == 0:
        batch.file.delete(save=False)
        raise ApplicationError(
            f"{filename} is empty: there is nothing to import.", {"file": "empty"}
        )
    batch.sha256 = digest.hexdigest()
    batch.file_size = size
    batch.save()
    return batch


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


# --- Running a batch ----------------------------------------------------------------------

#: Runs started for one batch before the sweep gives up and marks it failed.
MAX_ATTEMPTS = 3


def import_batches_stuck(*, now=None, grace_seconds: float | None = None) -> list[int]:
    """Batches whose run never started within ``grace_seconds`` of the upload (the message was
    lost: broker down, or restarted empty) or started longer than STALE_AFTER ago and never
    finished (the worker died)."""
    now = now or timezone.now()
    grace = timedelta(
        seconds=settings.SWEEP_GRACE_SECONDS if grace_seconds is None else grace_seconds
    )
    running = (ImportBatch.Status.VALIDATING, ImportBatch.Status.WRITING)
    return list(
        ImportBatch.objects.filter(
            Q(status=ImportBatch.Status.PENDING, created_at__lt=now - grace)
            | Q(status__in=running, started_at__lt=now - STALE_AFTER)
        ).values_list("pk", flat=True)
    )


def import_batch_requeue(*, batch_id: int, reset_attempts: bool = False) -> ImportBatch:
    """Send a stuck batch again, or mark it failed after MAX_ATTEMPTS started runs (nothing of
    it was kept: each run writes in one transaction). Also an admin's "retry"
    (``reset_attempts``: a fresh count; a failed batch runs again from its stored file)."""
    from imports.tasks import run_import

    with transaction.atomic():
        batch = ImportBatch.objects.select_for_update().get(pk=batch_id)
        if reset_attempts:
            if batch.status == ImportBatch.Status.SUCCEEDED:
                raise Conflict(f"{batch.filename} was imported; upload it again to re-import.")
            batch.status, batch.attempts, batch.started_at = ImportBatch.Status.PENDING, 0, None
            batch.message, batch.finished_at = "", None
            batch.save(update_fields=["status", "attempts", "started_at", "message", "finished_at"])
        elif batch.status in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED):
            return batch
        elif batch.attempts >= MAX_ATTEMPTS:
            return _fail(
                batch,
                None,
                f"The import was started {batch.attempts} times and never finished (is a worker "
                f"running, with enough memory and time? See its log); nothing was imported. "
                f"Retry it, or upload the file again.",
            )
        services.enqueue_on_commit(run_import, batch.pk)
    return batch


def import_batch_mark_failed(*, batch_id: int, reason: str) -> ImportBatch:
    """An admin's decision: a pending or running batch stops here, with their reason."""
    with transaction.atomic():
        batch = ImportBatch.objects.select_for_update().get(pk=batch_id)
        if batch.status in (ImportBatch.Status.SUCCEEDED, ImportBatch.Status.FAILED):
            return batch
        return _fail(batch, None, reason[:2000])


def _claim(batch_id: int) -> ImportBatch | None:
    """Move a pending (or abandoned) batch to VALIDATING; None when it is not ours to run."""
    with transaction.atomic():
        batch = (
            ImportBatch.objects.select_for_update()
            .select_related("project")
            .filter(pk=batch_id)
            .first()
        )
        if batch is None:
            return None
        now = timezone.now()
        running = (ImportBatch.Status.VALIDATING, ImportBatch.Status.WRITING)
        abandoned = batch.status in running and (
            batch.started_at is None or batch.started_at < now - STALE_AFTER
        )
        if batch.status != ImportBatch.Status.PENDING and not abandoned:
            return None
        batch.status = ImportBatch.Status.VALIDATING
        batch.started_at = now
        batch.validated_at = None
        batch.rows_done = batch.rows_written = batch.bytes_done = 0
        batch.attempts += 1
        batch.save(
            update_fields=[
                "status", "started_at", "validated_at", "rows_done", "rows_written", "bytes_done",
                "attempts",
            ]
        )  # fmt: skip
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
        self._side = None

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
        table = ImportBatch._meta.db_table
        columns = ", ".join(f"{connection.ops.quote_name(key)} = %s" for key in values)
        try:
            with self._side.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {table} SET {columns} WHERE id = %s", [*values.values(), self.batch_id]
                )
        except Exception:  # progress is a nicety; never fail the import for it
            logger.warning("could not save import progress", exc_info=True)

    def close(self) -> None:
        if self._side is not None:
            self._side.close()
            self._side = None


def _existing_lookup(project: Project) -> Callable[[Sequence[str]], Collection[str]]:
    def lookup(ids: Sequence[str]) -> Collection[str]:
        return set(
            Item.objects.filter(project=project, external_id__in=list(ids)).values_list(
                "external_id", flat=True
            )
        )

    return lookup


def _fail(batch: ImportBatch, report: ImportReport | None, message: str) -> ImportBatch:
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
    return batch


def import_batch_run(*, batch_id: int) -> ImportBatch:
    """Validate, then write, one batch. Safe to call twice: a batch that already succeeded or
    failed (or that another worker is running) is returned as it is."""
    batch = _claim(batch_id)
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
        return _fail(batch, None, message)
    finally:
        progress.close()


def _run(batch: ImportBatch, progress: _ProgressWriter) -> ImportBatch:
    project = batch.project
    options = batch.options or {}
    layout = options.get("layout", "rows")
    policy = options.get("duplicate_policy", "reject")
    schema = import_schema(project, layout)
    checked = _MappedSchema(schema, _mapper(project, layout), options)
    lookup = _existing_lookup(project)
    with batch.file.open("rb") as handle:

        def on_rows(rows: int) -> None:
            progress.save(rows_done=rows, bytes_done=min(handle.tell(), batch.file_size))

        report = validate_stream(
            handle,
            fmt=batch.format,
            schema=checked,  # type: ignore[arg-type]
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
        return _fail(batch, report, report.summary())
    if report.sha256 != batch.sha256:
        return _fail(
            batch,
            report,
            "The stored file no longer matches the upload (SHA-256); upload it again.",
        )
    if report.rows_total == 0:
        return _fail(batch, report, f"{batch.filename} holds no rows: there is nothing to import.")
    batch.status = ImportBatch.Status.WRITING
    batch.validated_at = timezone.now()
    batch.save(update_fields=["status", "validated_at", "rows_total", "rows_done", "bytes_done"])
    try:
        created, updated = _write(batch, schema, lookup, progress, report.sha256)
    except ImportRejected as rejected:
        return _fail(
            batch,
            rejected.report,
            f"Nothing was imported: {rejected.reason}.",
        )
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
    mapper = _mapper(project, options.get("layout", "rows"))
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
    if created and first_stage is not None:
        services.item_stages_open(items=Item.objects.filter(import_batch=batch), stage=first_stage)
    if created:
        services.planner_statistics_refresh(Item, ItemStage)
    return created, updated


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
        table = Item._meta.db_table
        columns = ("project_id", "external_id", "payload", "source", '"group"', "purpose",
                   "import_batch_id", "status", "version", "created_at")  # fmt: skip
        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
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


# --- Reading progress ---------------------------------------------------------------------


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


def import_batch_progress(batch: ImportBatch, *, now=None) -> ImportProgress:
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
