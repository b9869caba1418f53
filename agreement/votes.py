"""Reading a stage's votes: the one SQL spelling of a kind's vote (``vote_sql``, also used by the
release export), the votes of a stage as arrays for the statistics (``stage_votes``: PostgreSQL's
binary COPY when it can, the ORM otherwise, the same result either way), its gold answers and
skips. Read by the agreement refresh (workers), the dashboards and the release datasheet; kept
apart from the dashboards' selectors because it is the hot, SQL-heavy half of the app.

The hand-written reads here run on ``rungwise.replica.read_connection``: on a page marked
``@reads_from_replica`` (the Agreement tab) they read the replica as its querysets do, and the
primary everywhere else (the refresh, the release build).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from datetime import datetime
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Count, F

from agreement.stage_statistics import StageVotes
from annotation import sql
from annotation.advisory import advisory_annotators
from annotation.kinds import TaskKind, get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Stage,
)
from rungwise.replica import read_connection

_EXTERNAL_RATER_OFFSET = 2**31
_ANONYMOUS_RATER_OFFSET = 2**32


# --- Reading a stage's votes ----------------------------------------------------------------------


def _payload_path_sql(payload: str, path: str, params: dict[str, Any], name: str) -> str:
    """SQL (jsonb, NULL when a step is missing) of a dotted path into a payload, as
    ``annotation.kinds.base.payload_path`` reads it. Steps are chained ``->`` with text
    operands, which only descend into objects (``#>`` would also index arrays by a digit step,
    where the Python reader finds no vote). The steps are bound as ``%(name_n)s``."""
    steps = []
    for number, step in enumerate(path.split(".")):
        params[f"{name}_{number}"] = step
        steps.append(f"%({name}_{number})s::text")
    return f"({payload} -> {' -> '.join(steps)})"


def vote_sql(
    kind: TaskKind | None,
    *,
    payload: str,
    params: dict[str, Any],
    name: str,
    component: str | None = None,
) -> str:
    """SQL (jsonb; NULL or JSON null for no vote) of the vote an annotation casts, following the
    kind's declaration exactly as ``TaskKind.vote`` does: ``vote_field`` is a path into the
    payload; ``vote_fields`` builds an object of the components (NULL when every component is
    missing or null). ``component`` names one component of a structured vote (what
    ``agreement.field`` reads). An unregistered kind votes with ``payload["value"]``.

    ``payload`` is the SQL of the jsonb payload; the path steps are added to ``params`` under
    names starting with ``name``, for psycopg to bind (COPY takes no server-side parameters)."""
    if kind is None:
        return _payload_path_sql(payload, "value", params, name)
    if kind.vote_field is not None:
        return _payload_path_sql(payload, kind.vote_field, params, name)
    fields = dict(kind.vote_fields or {})
    if not fields:
        raise TypeError(f"{type(kind).__name__} declares neither vote_field nor vote_fields")
    if component is not None:
        return _payload_path_sql(payload, fields[component], params, f"{name}_{component}")
    parts = []
    for number, (key, path) in enumerate(fields.items()):
        params[f"{name}_key_{number}"] = key
        parts.append(
            f"%({name}_key_{number})s::text, "
            + _payload_path_sql(payload, path, params, f"{name}_{number}")
        )
    built = f"jsonb_build_object({', '.join(parts)})"
    return f"(CASE WHEN jsonb_strip_nulls({built}) = '{{}}'::jsonb THEN NULL ELSE {built} END)"


def agreement_vote_sql(kind: TaskKind, *, payload: str, params: dict[str, Any], name: str) -> str:
    """SQL (jsonb) of what agreement reads from an annotation: ``TaskKind.agreement_value``
    (the vote, or its ``agreement.field`` component)."""
    component = kind.agreement.field if kind.vote_field is None else None
    return vote_sql(kind, payload=payload, params=params, name=name, component=component)


def stage_categories(stage: Stage) -> list[Any] | None:
    """The categories agreement counts for a categorical stage (the kind's, or the distinct vote
    values seen, sorted); None for numeric kinds and kinds without agreement figures."""
    kind = get_kind(stage.kind)
    if not kind.agreement.categorical:
        return None
    declared = kind.categories(stage.config)
    if declared is not None:
        return list(declared)
    seen = {
        kind.agreement_value(payload)
        for payload in Annotation.objects.filter(item_stage__stage=stage)
        .values_list("payload", flat=True)
        .iterator(chunk_size=5000)
    }
    seen.discard(None)
    return sorted(seen, key=lambda value: (str(type(value)), value))


def last_phase(stage: Stage) -> int | None:
    """The index of the stage's last phase, whose annotations (of the item stage's current
    round) are the ones agreement counts; None for a stage without phases (every annotation of
    the current round counts)."""
    return len(stage.phases) - 1 if stage.phases else None


def stage_votes(
    stage: Stage,
    *,
    as_of: datetime | None = None,
    fast: bool = True,
    include_advisory: bool = False,
) -> StageVotes:
    """The annotations of the stage's completed items as a :class:`StageVotes`.

    Completed items are those no longer open (waiting for resolution, with a reviewer, resolved
    or discarded), so every item counts with all its annotations and a figure does not move
    with each half-annotated item. With ``as_of``, the items completed by then (for a history
    computed afterwards; an item reopened for an extra annotation counts from its last
    completion). Only the item stage's current round counts, the one its decision was made on
    (a case sent back to its author and reviewed again has one review per round, often by the
    same reviewer: counting both would give one rater two votes on one item); on a stage with
    phases, only the last phase (the earlier phases check and edit; the last one votes). A kind with
    ``agreement.scale`` None gets no votes (it has no agreement figures).

    The vote is read as the kind declares it (``TaskKind.agreement_value``). On PostgreSQL, one
    ``COPY … TO STDOUT (FORMAT binary)`` reads the vote in SQL (``agreement_vote_sql``) and
    streams fixed-width rows of (item stage, rater, category code or number, seconds) that numpy
    reads in 4 MB chunks: no Python object per annotation, memory bounded by the output arrays
    (24–32 bytes per annotation). On SQLite (or with ``fast=False``) a server-side iterator runs
    ``agreement_value`` on each payload. External (imported) raters get negative rater keys:
    −1 − (hash of their name + 2³¹).

    Advisory raters' answers (annotation.advisory: an extra model rater) are left out — the
    stage's figures are its deciding raters' — unless ``include_advisory`` (the models-against-
    people figures read them).
    """
    kind = get_kind(stage.kind)
    if kind.agreement.scale is None:
        return StageVotes.from_rows([], categories=None)
    categories = stage_categories(stage)
    if fast and read_connection(Annotation).vendor == "postgresql":
        votes = _votes_by_copy(stage, kind, categories, as_of)
    else:
        votes = _votes_by_iteration(stage, kind, categories, as_of)
    advisory = () if include_advisory else advisory_annotators(stage)
    if not advisory or not len(votes.raters):
        return votes
    keep = ~np.isin(votes.raters, np.fromiter(advisory, dtype=np.int64))
    return StageVotes(
        votes.items[keep], votes.raters[keep], votes.values[keep], votes.seconds[keep],
        votes.categories,
    )  # fmt: skip


def _votes_by_iteration(
    stage: Stage, kind: TaskKind, categories: list[Any] | None, as_of: datetime | None
) -> StageVotes:
    annotations = Annotation.objects.filter(item_stage__stage=stage).exclude(
        item_stage__state=ItemStage.State.OPEN
    )
    annotations = annotations.filter(round=F("item_stage__round"))
    phase = last_phase(stage)
    if phase is not None:
        annotations = annotations.filter(phase=phase)
    if as_of is not None:
        annotations = annotations.filter(item_stage__completed_at__lte=as_of)
    rows = []
    external: dict[str, int] = {}
    for pk, item_stage_id, annotator_id, rater_name, payload, seconds in annotations.values_list(
        "pk", "item_stage_id", "annotator_id", "external_rater", "payload", "seconds_spent"
    ).iterator(chunk_size=5000):
        if annotator_id is None and not rater_name:
            annotator_id = anonymous_rater_key(pk)
        elif annotator_id is None:
            annotator_id = external.setdefault(rater_name, external_rater_key(rater_name))
        value = kind.agreement_value(payload)
        if categories is not None and value is not None and value not in categories:
            value = None  # an answer the stage no longer offers casts no vote
        if categories is None and not _is_number(value):
            value = None
        rows.append((item_stage_id, annotator_id, value, seconds))
    return StageVotes.from_rows(rows, categories=categories)


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def anonymous_rater_key(annotation_id: int) -> int:
    """The rater key of an imported answer with no rater name (historic ratings released
    without rater ids, e.g. ExpliCa's): a rater of its own, below every named external key
    (those lie in [-2**32, -1]), so anonymous answers never count as one rater answering an
    item many times."""
    return -1 - _ANONYMOUS_RATER_OFFSET - annotation_id


def external_rater_key(name: str) -> int:
    """The negative rater key of an imported rater name (PostgreSQL's hashtext, as the COPY
    query computes it), so both reading paths agree."""
    connection = read_connection(Annotation)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT hashtext(%(name)s)::bigint", {"name": name})
            return -1 - (int(cursor.fetchone()[0]) + _EXTERNAL_RATER_OFFSET)
    # Elsewhere a stable hash of our own (the fast path does not run there).
    import zlib

    return -1 - zlib.crc32(name.encode())


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_COPY_HEADER = 19  # 11-byte signature, 4-byte flags, 4-byte header-extension length
_CHUNK = 4 * 1024 * 1024


def read_binary_copy(copy: Any, columns: dict[str, str]) -> dict[str, np.ndarray]:
    """The columns of a ``COPY … TO STDOUT (FORMAT binary)`` whose values are all fixed-width
    and never NULL, as numpy arrays (``columns``: name → big-endian numpy type, in order).

    The one binary COPY decoder of the project. Hand-written over psycopg's block stream
    because ``copy.rows()`` builds a Python tuple per row, several times slower than numpy
    reading 4 MB of rows at once (benchmarks/agreement_scale.py). A NULL (length −1) or a
    value of another width would misalign the rows: the checks on the field count and lengths
    refuse such a stream."""
    fields: list[tuple[str, str]] = [("fields", ">i2")]
    for number, (name, dtype) in enumerate(columns.items()):
        fields += [(f"length_{number}", ">i4"), (name, dtype)]
    row_type = np.dtype(fields)
    widths = [np.dtype(dtype).itemsize for dtype in columns.values()]
    parts: dict[str, list[np.ndarray]] = {name: [] for name in columns}
    pending = bytearray()
    header_done = False

    def parse(final: bool) -> None:
        nonlocal header_done
        if not header_done:
            if len(pending) < _COPY_HEADER:
                if final:
                    raise ValueError("the binary COPY stream ended before its header")
                return
            if pending[:11] != _COPY_SIGNATURE:
                raise ValueError("not a binary COPY stream")
            extension = int.from_bytes(pending[15:19], "big")
            if len(pending) < _COPY_HEADER + extension:
                if final:
                    raise ValueError("the binary COPY stream ended before its header")
                return
            del pending[: _COPY_HEADER + extension]
            header_done = True
        if final:
            if pending[-2:] != b"\xff\xff":
                raise ValueError("the binary COPY stream ended before its trailer")
            del pending[-2:]
        n_rows = len(pending) // row_type.itemsize
        if final and n_rows * row_type.itemsize != len(pending):
            raise ValueError("the binary COPY stream holds a row of another width")
        if not n_rows:
            return
        rows = np.frombuffer(bytes(pending[: n_rows * row_type.itemsize]), dtype=row_type)
        if (rows["fields"] != len(columns)).any() or any(
            (rows[f"length_{number}"] != width).any() for number, width in enumerate(widths)
        ):
            raise ValueError("a binary COPY row is NULL or not of the declared widths")
        for name in parts:
            native = np.float64 if rows.dtype[name].kind == "f" else np.int64
            parts[name].append(rows[name].astype(native))
        del pending[: n_rows * row_type.itemsize]

    for block in copy:
        pending += block
        if len(pending) >= _CHUNK:
            parse(final=False)
    parse(final=True)
    return {
        name: np.concatenate(chunks)
        if chunks
        else np.zeros(0, np.float64 if np.dtype(columns[name]).kind == "f" else np.int64)
        for name, chunks in parts.items()
    }


def vote_value_sql(
    kind: TaskKind, categories: list[Any] | None, a: Any, params: dict[str, Any]
) -> str:
    """SQL for an annotation's vote (``a``: the annotations' quoted columns): a float8 (NaN when
    the vote is no number) for a numeric stage (``categories`` None), else the int8 position of
    the vote among ``categories`` (-1 when it is none of them). Adds its parameters to
    ``params``. The one spelling of a vote for every statement that reads them."""
    vote = agreement_vote_sql(kind, payload=a.payload, params=params, name="vote")
    if categories is None:
        return (
            f"CASE WHEN jsonb_typeof({vote}) = 'number' "
            f"THEN ({vote} #>> '{{}}')::float8 ELSE 'NaN'::float8 END"
        )
    # #>> '{}' renders strings bare and numbers/booleans as JSON text; match categories alike.
    params["categories"] = [c if isinstance(c, str) else json.dumps(c) for c in categories]
    return f"COALESCE(array_position(%(categories)s::text[], {vote} #>> '{{}}') - 1, -1)::int8"


def rater_key_sql(a: Any) -> str:
    """SQL for a vote's rater key: the annotator's id; an imported named rater's negative key
    (from a hash of the name, so one name is one rater); an anonymous imported vote's own
    negative key (each its own rater)."""
    return f"""COALESCE({a.annotator_id}::int8,
                            CASE WHEN {a.external_rater} = ''
                                 THEN -1 - {_ANONYMOUS_RATER_OFFSET} - {a.id}::int8
                                 ELSE -1 - (hashtext({a.external_rater})::int8
                                            + {_EXTERNAL_RATER_OFFSET}) END)"""


def vote_filters_sql(stage: Stage, a: Any, s: Any, params: dict[str, Any]) -> str:
    """SQL conditions (each after " AND ") that keep the votes agreement reads: the item
    stage's current round and, for a phased stage, its last phase. Adds its parameters."""
    filters = f" AND {a.round} = {s.round}"
    phase = last_phase(stage)
    if phase is not None:
        filters += f" AND {a.phase} = %(phase)s"
        params["phase"] = phase
    return filters


def _votes_by_copy(
    stage: Stage, kind: TaskKind, categories: list[Any] | None, as_of: datetime | None
) -> StageVotes:
    # Hand-written (CONTRIBUTING.md, "SQL you can change safely"): a binary COPY of a join,
    # read straight into arrays, which the ORM cannot produce.
    a, s = sql.quoted(Annotation, "a"), sql.quoted(ItemStage, "s")
    params: dict[str, Any] = {"stage": stage.pk, "open": ItemStage.State.OPEN}
    value_sql = vote_value_sql(kind, categories, a, params)
    value_type = ">f8" if categories is None else ">i8"
    filters = vote_filters_sql(stage, a, s, params)
    if as_of is not None:
        filters += f" AND {s.completed_at} <= %(as_of)s"
        params["as_of"] = as_of
    query = f"""
        COPY (
            SELECT {a.item_stage_id}::int8,
                   {rater_key_sql(a)},
                   {value_sql},
                   COALESCE({a.seconds_spent}, 'NaN'::float8)
            FROM {sql.table(Annotation)} a JOIN {sql.table(ItemStage)} s
                ON {s.id} = {a.item_stage_id}
            WHERE {s.stage_id} = %(stage)s AND {s.state} <> %(open)s AND {a.is_current}{filters}
        ) TO STDOUT (FORMAT binary)
    """
    # The replica on a marked page (chosen before the transaction: one open on the primary
    # would keep the reads there).
    connection = read_connection(Annotation)
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        # The join's hash table of item stages (16 bytes a row) spills to temporary files
        # with the default 4 MB; give this one read enough to keep it in memory.
        cursor.execute("SET LOCAL work_mem = '64MB'")
        # psycopg's own COPY, past Django's cursor: its errors are made Django's (and mark a
        # failing replica's connection, so the page runs again on the primary) here.
        with connection.wrap_database_errors, cursor.cursor.copy(query, params) as copy:
            columns = read_binary_copy(
                copy, {"item": ">i8", "rater": ">i8", "value": value_type, "seconds": ">f8"}
            )
    return StageVotes(
        items=columns["item"],
        raters=columns["rater"],
        values=columns["value"],
        seconds=columns["seconds"],
        categories=None if categories is None else tuple(categories),
    )


def stage_gold(stage: Stage) -> dict[int, Any]:
    """{item stage id: gold vote value} for the stage's items with a known answer. A gold
    payload (a dict) goes through the kind's agreement_value; a bare value is the answer itself."""
    kind = get_kind(stage.kind)
    gold = {}
    for item_stage_id, answer in (
        ItemStage.objects.filter(stage=stage, gold__isnull=False)
        .values_list("pk", "gold")
        .iterator(chunk_size=5000)
    ):
        value = kind.agreement_value(answer) if isinstance(answer, dict) else answer
        if value is not None:
            gold[item_stage_id] = value
    return gold


def stage_skips(stage: Stage) -> dict[int, tuple[int, int]]:
    """{annotator id: (skipped, submitted + skipped)} of the stage's assignments on work items:
    silent gold items are never work (annotation/gold.py), so their answers and skips count in
    neither the skip rate nor the decisions."""
    result: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for annotator_id, status, count in (
        Assignment.objects.filter(
            stage=stage, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED]
        )
        .exclude(item_stage__item__purpose=Item.Purpose.GOLD)
        .values_list("annotator_id", "status")
        .annotate(count=Count("pk"))
        .order_by()
    ):
        if status == Assignment.Status.SKIPPED:
            result[annotator_id][0] += count
        result[annotator_id][1] += count
    return {key: (value[0], value[1]) for key, value in result.items()}
