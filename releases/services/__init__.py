"""Releases: publish a version of a project, build its files in a Celery task, never change it.

``release_publish`` reserves the next version number (under a lock on the project row, backed by
the unique (project, version) constraint) and enqueues ``releases.tasks.build_release`` after
commit. ``release_build`` streams the project's finished items (accepted, and rejected-but-kept)
with their resolution in every stage, and their annotations under pseudonyms, into:

* ``items.jsonl`` / ``items.csv`` — one row per item: content, status, and per stage the
  resolved value, status, outcome, vote counts and the share of votes for the decided value;
  names in payloads removed or pseudonymised by the kind's identity rule
  (``releases.identities``), as in every other file of the release;
* ``annotations.jsonl`` / ``annotations.csv`` — one row per annotation, raters as ``R0001``…
  (pseudonyms stable within one release; identities never leave the database);
* ``items.parquet`` / ``annotations.parquet`` — the JSONL rows as Parquet, column for column
  (``releases.parquet``: JSON values as JSON text), written in row groups;
* the kind's own layout (``releases.layouts``), e.g. ExpliCa's CSV for ratings;
* ``README.md`` — the datasheet (``render_datasheet``): counts of people by role, items in and
  out of every stage, agreement per stage with its CI computed during the build over exactly
  the released items (``_agreement``; its UTC time stated), license, citation;
* ``manifest.json`` and ``SHA256SUMS`` — SHA-256 and size of every file;

zipped deterministically into one archive whose SHA-256 is stored on the Release. A diff against
the previous published version (items added, removed, changed) is stored in ``stats["diff"]``.

Memory stays flat in the number of rows, and every row is read once for all of its files: on
PostgreSQL the three annotation files come from ONE ``COPY (SELECT …) TO STDOUT`` whose rows
carry each annotation's JSONL line, CSV line and Parquet row, spelled by the database, for
every kind (``copy_export.copy_annotation_files``); items, and annotations on SQLite, are read
in keyset-paginated chunks and each row is handed to the three files' writers
(``releases.sinks``: pluggable per-file writers a dataset layout can reuse). The text files are
hashed and deflated by background threads as they are written, and the zip is assembled from
those deflate streams (``releases.zip_assembly``): nothing is read back or compressed twice. On
PostgreSQL the build's snapshot is exported and the annotation files are written on a second
connection that imports it, while the item files are written on the first: the database and
Python work at the same time, on the same moment's data. The diff keeps one 16-byte digest
per item id. Every CSV cell a spreadsheet would run as a formula is neutralised
(``releases.writers.spreadsheet_safe`` and its SQL spelling). ``benchmarks/release_build.py``
measures a build of 1,000,002 annotations, before and after.

The services, by concern: ``publish`` (reserve the version, enqueue the build, the
confirmation page's preview), ``jobs`` (the build as a background job, ``annotation.jobs``:
claim, the beat sweep of stuck builds, requeue, an admin's retry and "mark failed"), ``build``
(the files in one snapshot, then published), ``rows`` (the rows and columns of the standard
files), ``figures`` (the datasheet's figures), ``archive`` (reading published releases: their
files, datasheet and diffs). Every name callers use is importable from ``releases.services``.
"""

from __future__ import annotations

from releases.services.archive import (
    DIFF_IDS_KEPT,
    release_archive_rows,
    release_compare,
    release_datasheet,
    release_earlier_versions,
)
from releases.services.build import release_build
from releases.services.figures import METRIC_PREFERENCE
from releases.services.jobs import (
    MAX_ATTEMPTS,
    STALE_AFTER,
    release_mark_failed,
    release_requeue,
    releases_stuck,
)
from releases.services.publish import (
    release_content_fingerprint,
    release_next_version,
    release_publish,
    release_publish_preview,
    release_publish_refusal,
    release_unresolved,
)
from releases.services.rows import (
    ANNOTATION_CHUNK,
    ANNOTATION_COLUMNS,
    ITEM_CHUNK,
    ITEM_COLUMNS,
    RELEASED_STATUSES,
    STAGE_FIELDS,
    item_csv_columns,
    release_annotation_rows,
    release_annotations_csv,
    release_annotations_jsonl,
    release_item_rows,
)

__all__ = [
    "ANNOTATION_CHUNK",
    "ANNOTATION_COLUMNS",
    "DIFF_IDS_KEPT",
    "ITEM_CHUNK",
    "ITEM_COLUMNS",
    "MAX_ATTEMPTS",
    "METRIC_PREFERENCE",
    "RELEASED_STATUSES",
    "STAGE_FIELDS",
    "STALE_AFTER",
    "item_csv_columns",
    "release_annotation_rows",
    "release_annotations_csv",
    "release_annotations_jsonl",
    "release_archive_rows",
    "release_build",
    "release_compare",
    "release_content_fingerprint",
    "release_datasheet",
    "release_earlier_versions",
    "release_item_rows",
    "release_mark_failed",
    "release_next_version",
    "release_publish",
    "release_publish_preview",
    "release_publish_refusal",
    "release_requeue",
    "release_unresolved",
    "releases_stuck",
]
