"""The rows a release is made of: its items with their result in every stage, and its
annotations under pseudonyms, streamed with memory flat in the row count; and the columns of
items.csv. On PostgreSQL the annotation files are written by COPY (``releases.copy_export``),
with the same rows."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import connection

from annotation.kinds import KINDS
from annotation.kinds.base import payload_path
from annotation.models import Annotation, Item, ItemStage, Project, Resolution, Stage
from annotation.sql import quoted, table
from imports.core import schema_for_kind
from releases.copy_export import (
    copy_annotation_files,
    copy_annotations_csv,
    copy_annotations_jsonl,
)
from releases.identities import identity_rule, salt_for
from releases.parquet import (
    ParquetSink,
    integer_column,
    json_column,
    number_column,
    text_column,
)
from releases.pseudonyms import RaterPseudonyms
from releases.sinks import ByteSink, CsvSink, Deflated, JsonlSink, close_all, write_rows
from releases.writers import (
    FileEntry,
    csv_timestamp,
    finite_or_none,
    write_csv,
    write_jsonl,
)

RELEASED_STATUSES = (Item.Status.ACCEPTED, Item.Status.REJECTED)
ITEM_CHUNK = 2000
ANNOTATION_CHUNK = 10_000
DIFF_IDS_KEPT = 200
ITEM_COLUMNS = ["external_id", "status", "purpose", "group", "source", "version"]
STAGE_FIELDS = ["state", "value", "status", "outcome", "n_annotations", "votes", "agreement",
                "adjudicated"]  # fmt: skip
ANNOTATION_COLUMNS = ["external_id", "stage", "rater", "value", "payload", "seconds_spent",
                      "created_at", "item_version"]  # fmt: skip
#: The columns of items.parquet and annotations.parquet: the JSONL rows' keys, in order
#: (``releases.parquet``: JSON of any shape as JSON text).
ITEM_PARQUET = [
    *map(text_column, ["external_id", "status", "purpose", "group", "source"]),
    integer_column("version"),
    json_column("payload"),
    json_column("stages"),
]
ANNOTATION_PARQUET = [
    *map(text_column, ["external_id", "stage", "rater"]),
    json_column("value"),
    json_column("payload"),
    number_column("seconds_spent"),
    text_column("created_at"),
    integer_column("item_version"),
]


def _stage_result(state: str, resolution: Mapping[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"state": state}
    if resolution is None:
        return result
    votes = dict(sorted((resolution["votes"] or {}).items()))
    total = sum(count for count in votes.values() if isinstance(count, int | float))
    top = max(votes.values()) if votes else None
    result.update(
        value=resolution["value"],
        status=resolution["status"],
        outcome=resolution["outcome"],
        n_annotations=resolution["n_annotations"],
        votes=votes,
        agreement=round(top / total, 6) if total and top is not None else None,
        adjudicated=resolution["status"] == Resolution.Status.ADJUDICATED,
    )
    return result


def _json(value: Any) -> Any:
    """A JSON column as the cursor returns it (text on SQLite, and from psycopg under Django)."""
    return json.loads(value) if isinstance(value, str) else value


def release_item_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The released items of a project, in creation order, with their result in every stage.
    Keyset-paginated: two queries per ``ITEM_CHUNK`` items, memory flat in the item count.

    Hand-written SQL (tables quoted, parameters named; both databases): through the ORM the
    JSON converters and the per-chunk IN list of ids cost more than the rest of a row."""
    stages = list(Stage.objects.filter(project=project).order_by("position"))
    slugs = {stage.pk: stage.slug for stage in stages}
    identities, salt = identity_rule(project.kind), salt_for(project)
    i, s, r = quoted(Item, "i"), quoted(ItemStage, "s"), quoted(Resolution, "r")
    params: dict[str, Any] = {"project": project.pk, "limit": ITEM_CHUNK}
    status_list = _named_list("status", list(RELEASED_STATUSES), params)
    stage_list = _named_list("stage", list(slugs), params) or "NULL"
    # Keyset on the primary key: an index range scan per chunk whatever the project's size
    # (ordering by external_id made the planner re-sort the remaining items for every chunk).
    items_sql = f"""
        SELECT {i.id}, {i.external_id}, {i.status}, {i.purpose}, {i.group}, {i.source},
               {i.version}, {i.payload}
        FROM {table(Item)} i
        WHERE {i.project_id} = %(project)s AND {i.status} IN ({status_list})
          AND {i.id} > %(after)s
        ORDER BY {i.id}
        LIMIT %(limit)s"""
    # The item stages of the chunk's id range (those of items not released are skipped below),
    # each stage's in pipeline order.
    stages_sql = f"""
        SELECT {s.item_id}, {s.stage_id}, {s.state}, {r.id}, {r.value}, {r.status},
               {r.outcome}, {r.n_annotations}, {r.votes}
        FROM {table(ItemStage)} s
        LEFT JOIN {table(Resolution)} r ON {r.item_stage_id} = {s.id}
        WHERE {s.stage_id} IN ({stage_list}) AND {s.item_id} > %(after)s
          AND {s.item_id} <= %(last)s"""
    position = {stage.pk: number for number, stage in enumerate(stages)}
    last = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(items_sql, {**params, "after": last})
            chunk = cursor.fetchall()
            if not chunk:
                return
            cursor.execute(stages_sql, {**params, "after": last, "last": chunk[-1][0]})
            stage_rows = sorted(cursor.fetchall(), key=lambda row: position[row[1]])
        results: dict[int, dict[str, Any]] = defaultdict(dict)
        for item_id, stage_id, state, res_pk, value, status, outcome, n, votes in stage_rows:
            resolution = (
                None
                if res_pk is None
                else {
                    "value": _json(value),
                    "status": status,
                    "outcome": outcome,
                    "n_annotations": n,
                    "votes": _json(votes),
                }  # fmt: skip
            )
            results[item_id][slugs[stage_id]] = _stage_result(state, resolution)
        for pk, external_id, status, purpose, group, source, version, payload in chunk:
            yield {
                "external_id": external_id,
                "status": status,
                "purpose": purpose,
                "group": group,
                "source": source,
                "version": version,
                "payload": identities.apply(_json(payload), salt),
                "stages": results.get(pk, {}),
            }
        last = chunk[-1][0]


def _named_list(name: str, values: list[Any], params: dict[str, Any]) -> str:
    """``%(name_0)s, %(name_1)s, …`` for an IN list of ``values``, each bound in ``params``."""
    for number, value in enumerate(values):
        params[f"{name}_{number}"] = value
    return ", ".join(f"%({name}_{number})s" for number in range(len(values)))


def release_annotation_rows(project: Project) -> Iterator[dict[str, Any]]:
    """Every current annotation of the released items (a changed answer as changed: superseded
    versions are history, not released), in id order, raters as pseudonyms
    (``releases.pseudonyms``: ``R0001`` for people in the order they first appear, ``E0001``
    for imported raters), the vote as the stage's kind declares it (``TaskKind.vote``).

    Keyset-paginated raw SQL (one query per ``ANNOTATION_CHUNK`` rows, memory flat in the row
    count): this is the largest file of a release, and the ORM's per-value conversions would
    halve its speed. The Python writer of annotations.jsonl/.csv on SQLite, and the rows the
    kinds' layouts read; on PostgreSQL the files are written by COPY (``copy_export``) with the
    same rows once parsed."""
    stages = {
        stage.pk: (stage.slug, KINDS.get(stage.kind))
        for stage in Stage.objects.filter(project=project)
    }
    # Hand-written (see above): tables quoted, parameters named, one per listed value (an IN
    # list, which both databases take).
    a, s, i = quoted(Annotation, "a"), quoted(ItemStage, "s"), quoted(Item, "i")
    params: dict[str, Any] = {"after": 0, "limit": ANNOTATION_CHUNK}
    stage_list = _named_list("stage", list(stages), params) or "NULL"
    status_list = _named_list("status", list(RELEASED_STATUSES), params)
    sql = f"""
        SELECT {a.id}, {i.external_id}, {s.stage_id}, {a.annotator_id}, {a.external_rater},
               {a.payload}, {a.seconds_spent}, {a.created_at}, {a.item_version}
        FROM {table(Annotation)} a
        JOIN {table(ItemStage)} s ON {s.id} = {a.item_stage_id}
        JOIN {table(Item)} i ON {i.id} = {s.item_id}
        WHERE {s.stage_id} IN ({stage_list})
          AND {i.status} IN ({status_list}) AND {a.is_current} AND {a.id} > %(after)s
        ORDER BY {a.id}
        LIMIT %(limit)s"""
    loads = json.loads
    pseudonyms = RaterPseudonyms()
    identities, salt = identity_rule(project.kind), salt_for(project)
    last = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, {**params, "after": last})
            chunk = cursor.fetchall()
        if not chunk:
            return
        for row in chunk:
            _pk, external_id, stage_id, annotator_id, rater, payload, seconds, created, version = (
                row
            )
            if isinstance(payload, str):  # SQLite, and psycopg when Django leaves jsonb as text
                payload = loads(payload)
            slug, kind = stages[stage_id]
            if isinstance(created, str):  # SQLite returns text
                created = datetime.fromisoformat(created)
            yield {
                "external_id": external_id,
                "stage": slug,
                "rater": pseudonyms(annotator_id, rater),
                "value": kind.vote(payload) if kind is not None else payload_path(payload, "value"),
                "payload": identities.apply(payload, salt),
                "seconds_spent": seconds,
                "created_at": csv_timestamp(created),
                "item_version": version,
            }
        last = chunk[-1][0]


def release_annotations_jsonl(project: Project, path: str | Path) -> FileEntry:
    """Write annotations.jsonl of ``project`` (the rows of ``release_annotation_rows``): on
    PostgreSQL by COPY (``copy_export``, the database's JSON spelling), on SQLite by Python.
    Memory flat either way."""
    if connection.vendor == "postgresql":
        return copy_annotations_jsonl(project, path, statuses=RELEASED_STATUSES)
    return write_jsonl(release_annotation_rows(project), path)


def release_annotations_csv(project: Project, path: str | Path) -> FileEntry:
    """Write annotations.csv of ``project`` (columns ``ANNOTATION_COLUMNS``): on PostgreSQL by
    COPY, on SQLite by ``write_csv`` of ``release_annotation_rows``."""
    if connection.vendor == "postgresql":
        return copy_annotations_csv(
            project, path, statuses=RELEASED_STATUSES, columns=ANNOTATION_COLUMNS
        )
    return write_csv(release_annotation_rows(project), path, columns=ANNOTATION_COLUMNS)


def _payload_keys(project: Project) -> list[str]:
    """Every top-level payload key of the released items (one query), schema fields first."""
    # Hand-written: the ORM cannot list the keys of a JSON column (jsonb_object_keys on
    # PostgreSQL, json_each on SQLite). Names quoted, parameters named.
    items, i = table(Item), quoted(Item, "i")
    params: dict[str, Any] = {"project": project.pk}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            params["statuses"] = list(RELEASED_STATUSES)
            cursor.execute(
                f"SELECT DISTINCT jsonb_object_keys({i.payload}) FROM {items} i "
                f"WHERE {i.project_id} = %(project)s AND {i.status} = ANY(%(statuses)s) "
                f"AND jsonb_typeof({i.payload}) = 'object'",
                params,
            )
        else:
            statuses = _named_list("status", list(RELEASED_STATUSES), params)
            cursor.execute(
                f"SELECT DISTINCT j.key FROM {items} i, json_each({i.payload}) AS j "
                f"WHERE {i.project_id} = %(project)s AND {i.status} IN ({statuses})",
                params,
            )
        keys = {row[0] for row in cursor.fetchall()}
    keys -= identity_rule(project.kind).removed_keys  # no column for a field never released
    declared = [name for name in schema_for_kind(project.kind).field_names if name in keys]
    return declared + sorted(keys - set(declared))


def item_csv_columns(project: Project, stages: list[Stage]) -> list[str]:
    keys = _payload_keys(project)
    # A key holding a dot would read as a path; keep such payloads whole in one JSON cell.
    payload = ["payload"] if any("." in key for key in keys) else [f"payload.{k}" for k in keys]
    stage_columns = [f"stages.{stage.slug}.{name}" for stage in stages for name in STAGE_FIELDS]
    return ITEM_COLUMNS + payload + stage_columns


# --- The standard files, every format in one pass -----------------------------------------------


@dataclass
class WrittenFiles:
    """Files written by one pass: their entries (in writing order) and, for those deflated
    while written, the deflate streams the zip is assembled from (by file name)."""

    entries: list[FileEntry]
    deflated: dict[str, Deflated]


def _written(sinks: list[Any], entries: list[FileEntry]) -> WrittenFiles:
    deflated = {}
    for sink in sinks:
        stream = getattr(getattr(sink, "sink", sink), "deflated", None)
        if stream is not None:
            deflated[stream.path.name.removesuffix(".deflate")] = stream
    return WrittenFiles(entries, deflated)


def release_item_files(project: Project, stages: list[Stage], out_dir: Path) -> WrittenFiles:
    """items.jsonl, items.csv and items.parquet of ``project`` from ONE pass over
    ``release_item_rows``, the text files deflated as they are written."""
    return write_item_files(release_item_rows(project), item_csv_columns(project, stages), out_dir)


_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_ITEM_KEYS = (*ITEM_COLUMNS, "payload", "stages")


def _json_text(value: Any) -> str:
    try:
        return _dumps(value)
    except ValueError:  # a NaN somewhere: null, as every file spells it (finite_or_none)
        return _dumps(finite_or_none(value))


def write_item_files(
    rows: Iterable[Mapping[str, Any]], columns: list[str], out_dir: Path
) -> WrittenFiles:
    """items.jsonl, items.csv (``columns``) and items.parquet of ``rows`` (those of
    ``release_item_rows``: the keys ``ITEM_COLUMNS``, payload, stages, in that order), in one
    pass. Each row's payload and stages are encoded as JSON once, for the JSONL line and the
    Parquet JSON columns alike; the bytes are those of ``JsonlSink`` and ``ParquetSink.write``
    (tests/releases/test_services.py compares them)."""
    jsonl = ByteSink(out_dir / "items.jsonl", deflate=True)
    sinks: list[Any] = [
        jsonl,
        CsvSink(out_dir / "items.csv", columns=columns, deflate=True),
        ParquetSink(out_dir / "items.parquet", ITEM_PARQUET),
    ]
    table, parquet = sinks[1], sinks[2]
    count = 0
    try:
        for row in rows:
            if tuple(row) != _ITEM_KEYS:
                raise ValueError(f"an item row has the keys {list(row)}, not {list(_ITEM_KEYS)}")
            payload, stages = row["payload"], row["stages"]
            payload_text, stages_text = _json_text(payload), _json_text(stages)
            head = [row[key] for key in ITEM_COLUMNS]
            scalars = _json_text(dict(zip(ITEM_COLUMNS, head, strict=True)))
            line = f'{scalars[:-1]},"payload":{payload_text},"stages":{stages_text}}}\n'
            jsonl.write(line.encode("utf-8"))
            table.write(row)
            parquet.write_values(
                [*head, None if payload is None else payload_text,
                 None if stages is None else stages_text]
            )  # fmt: skip
            count += 1
    except BaseException:
        jsonl.rows = count
        close_all(sinks, raise_failure=False)
        raise
    jsonl.rows = count
    return _written(sinks, close_all(sinks))


def release_annotation_files(project: Project, out_dir: Path) -> WrittenFiles:
    """annotations.jsonl, annotations.csv and annotations.parquet of ``project``: on
    PostgreSQL from ONE statement (``copy_export.copy_annotation_files``), on SQLite from one
    pass over ``release_annotation_rows``; the text files deflated as they are written."""
    if connection.vendor != "postgresql":
        sinks: list[Any] = [
            JsonlSink(out_dir / "annotations.jsonl", deflate=True),
            CsvSink(out_dir / "annotations.csv", columns=ANNOTATION_COLUMNS, deflate=True),
            ParquetSink(out_dir / "annotations.parquet", ANNOTATION_PARQUET),
        ]
        return _written(sinks, write_rows(release_annotation_rows(project), sinks))
    jsonl = ByteSink(out_dir / "annotations.jsonl", deflate=True)
    table = ByteSink(out_dir / "annotations.csv", deflate=True)
    parquet = ParquetSink(out_dir / "annotations.parquet", ANNOTATION_PARQUET)
    rows = None
    try:
        rows = copy_annotation_files(
            project, statuses=RELEASED_STATUSES, jsonl=jsonl, csv=table,
            csv_columns=ANNOTATION_COLUMNS, parquet=parquet,
        )  # fmt: skip
    finally:
        jsonl.rows = table.rows = rows
        entries = [jsonl.close(), table.close(), parquet.close()]
    return _written([jsonl, table, parquet], entries)
