"""Imports of candidate items: upload → validate every row → write all rows in one transaction.

The Django side of ``imports.core`` (the pure, streaming core). One ImportBatch per uploaded
file keeps the file (MEDIA_ROOT), its SHA-256, counts, progress and row-level errors. The
services, by concern:

* ``uploads`` — ``import_batch_create``: the upload saved to ``ImportBatch.file`` and hashed
  while it is copied, its size, format and options checked;
* ``mapping`` — the schema rows are checked against and how a clean row becomes an item
  (``import_schema``, ``register_item_mapper``, ``ItemFields``);
* ``run`` — ``import_batch_start`` / ``import_batch_run``: pass 1 validates every row, pass 2
  writes them all in one transaction (a failed import keeps nothing);
* ``staged`` — the same promise in one pass on PostgreSQL: rows COPYed into a temporary staging
  table, ids repeated in the file or already in the project found by SQL, one INSERT … SELECT
  (memory flat whatever the file's size);
* ``jobs`` — the batch as a background job (``annotation.jobs``): claim, the beat sweep of
  stuck batches, requeue, an admin's retry and "mark failed".

Progress and errors are read by ``imports.selectors`` (``import_batch_progress``,
``import_batch_errors``, also importable from here).

Small files are run inline by the caller; larger ones (``settings.RUNGWISE_IMPORT_INLINE_MAX_BYTES``)
by the Celery task ``imports.tasks.run_import``, which calls ``import_batch_run`` and is safe
to run twice (a batch already finished is left alone).

Plug-in points for project kinds
--------------------------------
* ``imports.core.schema.register_schema(kind, RowSchema(...))`` — the rows a kind accepts.
* ``register_item_mapper(kind, mapper)`` — how a clean row becomes an item: ``mapper(clean,
  schema, options) -> ItemFields`` (``imports.services.mapping``).
* Layout ``"release"``: the rows of a Rungwise release (``items.jsonl``), whose item content is
  under ``"payload"``; re-importing a release reproduces its items (the round trip).
"""

from __future__ import annotations

from imports.selectors import ImportProgress, import_batch_errors, import_batch_progress
from imports.services.jobs import (
    MAX_ATTEMPTS,
    STALE_AFTER,
    import_batch_mark_failed,
    import_batch_requeue,
    import_batches_stuck,
)
from imports.services.mapping import (
    ITEM_MAPPERS,
    RELEASE_ROW_SCHEMA,
    ItemFields,
    ItemMapper,
    default_item_mapper,
    import_schema,
    map_row,
    register_item_mapper,
    sample_rows,
    shown_fields,
)
from imports.services.run import (
    ERROR_CAP,
    PROGRESS_EVERY_SECONDS,
    WRITE_BATCH_SIZE,
    import_batch_run,
    import_batch_start,
)
from imports.services.uploads import (
    LAYOUTS,
    MAX_FILENAME,
    import_batch_create,
    inline_max_bytes,
    upload_max_bytes,
)

__all__ = [
    "ERROR_CAP",
    "ITEM_MAPPERS",
    "LAYOUTS",
    "MAX_ATTEMPTS",
    "MAX_FILENAME",
    "PROGRESS_EVERY_SECONDS",
    "RELEASE_ROW_SCHEMA",
    "STALE_AFTER",
    "WRITE_BATCH_SIZE",
    "ImportProgress",
    "ItemFields",
    "ItemMapper",
    "default_item_mapper",
    "import_batch_create",
    "import_batch_errors",
    "import_batch_mark_failed",
    "import_batch_progress",
    "import_batch_requeue",
    "import_batch_run",
    "import_batch_start",
    "import_batches_stuck",
    "import_schema",
    "inline_max_bytes",
    "map_row",
    "register_item_mapper",
    "sample_rows",
    "shown_fields",
    "upload_max_bytes",
]
