"""Reads for the researchers' dashboards, the agreement refresh and the adjudication queue.

Annotators never reach anything here: the views that call these selectors fetch the project with
``access_project(..., MONITOR)`` or ``(..., ADJUDICATE)`` first.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, F, Max, Min, Q, QuerySet, Window
from django.db.models.functions import RowNumber, Trunc

from agreement.models import AgreementSnapshot
from agreement.stage_statistics import StageVotes
from annotation.kinds import TaskKind, get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Membership,
    Project,
    Resolution,
    Role,
    Stage,
)
from annotation.selectors import annotations_visible, item_stages_with_final_votes

#: Metric names of AgreementSnapshot rows and how dashboards label them.
METRIC_LABELS = {
    "fleiss_kappa": "Fleiss' κ",
    "krippendorff_alpha_nominal": "Krippendorff's α (nominal)",
    "krippendorff_alpha_interval": "Krippendorff's α (interval)",
    "krippendorff_alpha_ordinal": "Krippendorff's α (ordinal)",
    "percent_agreement": "Percent agreement",
    "annotator_agreement": "Median annotator agreement with the majority",
}
#: The snapshot metric that holds the per-annotator table of a refresh.
ANNOTATOR_METRIC = "annotator_agreement"
#: Metrics plotted as the stage's headline agreement, in this order.
HEADLINE_METRICS = (
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_interval",
    "krippendorff_alpha_ordinal",
)
_EXTERNAL_RATER_OFFSET = 2**31


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
    round) are the ones agreement counts; None for a stage without phases (every annotation
    counts)."""
    return len(stage.phases) - 1 if stage.phases else None


def stage_votes(stage: Stage, *, as_of: datetime | None = None, fast: bool = True) -> StageVotes:
    """The annotations of the stage's completed items as a :class:`StageVotes`.

    Completed items are those no longer open (waiting for resolution, with a reviewer, resolved
    or discarded), so every item counts with all its annotations and a figure does not move
    with each half-annotated item. With ``as_of``, the items completed by then (for a history
    computed afterwards; an item reopened for an extra annotation counts from its last
    completion). On a stage with phases only the last phase's annotations of the item stage's
    current round count (the earlier phases check and edit; the last one votes). A kind with
    ``agreement.scale`` None gets no votes (it has no agreement figures).

    The vote is read as the kind declares it (``TaskKind.agreement_value``). On PostgreSQL, one
    ``COPY … TO STDOUT (FORMAT binary)`` reads the vote in SQL (``agreement_vote_sql``) and
    streams fixed-width rows of (item stage, rater, category code or number, seconds) that numpy
    reads in 4 MB chunks: no Python object per annotation, memory bounded by the output arrays
    (24–32 bytes per annotation). On SQLite (or with ``fast=False``) a server-side iterator runs
    ``agreement_value`` on each payload. External (imported) raters get negative rater keys:
    −1 − (hash of their name + 2³¹).
    """
    kind = get_kind(stage.kind)
    if kind.agreement.scale is None:
        return StageVotes.from_rows([], categories=None)
    categories = stage_categories(stage)
    if fast and connection.vendor == "postgresql":
        return _votes_by_copy(stage, kind, categories, as_of)
    return _votes_by_iteration(stage, kind, categories, as_of)


def _votes_by_iteration(
    stage: Stage, kind: TaskKind, categories: list[Any] | None, as_of: datetime | None
) -> StageVotes:
    annotations = Annotation.objects.filter(item_stage__stage=stage).exclude(
        item_stage__state=ItemStage.State.OPEN
    )
    phase = last_phase(stage)
    if phase is not None:
        annotations = annotations.filter(phase=phase, round=F("item_stage__round"))
    if as_of is not None:
        annotations = annotations.filter(item_stage__completed_at__lte=as_of)
    rows = []
    external: dict[str, int] = {}
    for item_stage_id, annotator_id, rater_name, payload, seconds in annotations.values_list(
        "item_stage_id", "annotator_id", "external_rater", "payload", "seconds_spent"
    ).iterator(chunk_size=5000):
        if annotator_id is None:
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


def external_rater_key(name: str) -> int:
    """The negative rater key of an imported rater name (PostgreSQL's hashtext, as the COPY
    query computes it), so both reading paths agree."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT hashtext(%s)::bigint", [name])
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


def _votes_by_copy(
    stage: Stage, kind: TaskKind, categories: list[Any] | None, as_of: datetime | None
) -> StageVotes:
    annotation = Annotation._meta.db_table
    item_stage = ItemStage._meta.db_table
    params: dict[str, Any] = {"stage": stage.pk, "open": ItemStage.State.OPEN}
    vote = agreement_vote_sql(kind, payload="a.payload", params=params, name="vote")
    if categories is None:
        value_sql = (
            f"CASE WHEN jsonb_typeof({vote}) = 'number' "
            f"THEN ({vote} #>> '{{}}')::float8 ELSE 'NaN'::float8 END"
        )
        value_type = ">f8"
    else:
        # #>> '{}' renders strings bare and numbers/booleans as JSON text; match categories alike.
        params["categories"] = [c if isinstance(c, str) else json.dumps(c) for c in categories]
        value_sql = (
            f"COALESCE(array_position(%(categories)s::text[], {vote} #>> '{{}}') - 1, -1)::int8"
        )
        value_type = ">i8"
    filters = ""
    phase = last_phase(stage)
    if phase is not None:
        filters += " AND a.phase = %(phase)s AND a.round = s.round"
        params["phase"] = phase
    if as_of is not None:
        filters += " AND s.completed_at <= %(as_of)s"
        params["as_of"] = as_of
    query = f"""
        COPY (
            SELECT a.item_stage_id::int8,
                   COALESCE(a.annotator_id::int8,
                            -1 - (hashtext(a.external_rater)::int8 + {_EXTERNAL_RATER_OFFSET})),
                   {value_sql},
                   COALESCE(a.seconds_spent, 'NaN'::float8)
            FROM {annotation} a JOIN {item_stage} s ON s.id = a.item_stage_id
            WHERE s.stage_id = %(stage)s AND s.state <> %(open)s AND a.is_current{filters}
        ) TO STDOUT (FORMAT binary)
    """
    with transaction.atomic(), connection.cursor() as cursor:
        # The join's hash table of item stages (16 bytes a row) spills to temporary files
        # with the default 4 MB; give this one read enough to keep it in memory.
        cursor.execute("SET LOCAL work_mem = '64MB'")
        with cursor.cursor.copy(query, params) as copy:
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
    """{annotator id: (skipped, submitted + skipped)} of the stage's assignments."""
    result: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for annotator_id, status, count in (
        Assignment.objects.filter(
            stage=stage, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED]
        )
        .values_list("annotator_id", "status")
        .annotate(count=Count("pk"))
        .order_by()
    ):
        if status == Assignment.Status.SKIPPED:
            result[annotator_id][0] += count
        result[annotator_id][1] += count
    return {key: (value[0], value[1]) for key, value in result.items()}


# --- Agreement snapshots ----------------------------------------------------------------------------


def latest_snapshots_by_stage(
    stages: Iterable[Stage], *, metrics: Iterable[str] | None = None
) -> dict[int, dict[str, AgreementSnapshot]]:
    """{stage id: {metric: latest snapshot}} of the given stages (only ``metrics``, if given),
    in one query whatever the number of stages.

    The one rule for "the latest snapshot of a metric", which every reader calls: the snapshot
    with the greatest ``computed_at``, ties broken by the greater id. (``computed_at``, not the
    id: a backfill stores past moments after newer rows.) One window query, row_number() over
    (stage, metric), on PostgreSQL and SQLite alike."""
    snapshots = AgreementSnapshot.objects.filter(stage_id__in=[stage.pk for stage in stages])
    if metrics is not None:
        snapshots = snapshots.filter(metric__in=list(metrics))
    latest = snapshots.annotate(
        newest=Window(
            RowNumber(),
            partition_by=[F("stage_id"), F("metric")],
            order_by=[F("computed_at").desc(), F("pk").desc()],
        )
    ).filter(newest=1)
    result: dict[int, dict[str, AgreementSnapshot]] = defaultdict(dict)
    for snapshot in latest:
        result[snapshot.stage_id][snapshot.metric] = snapshot
    return dict(result)


def latest_snapshots(
    stage: Stage, *, metrics: Iterable[str] | None = None
) -> dict[str, AgreementSnapshot]:
    """{metric: the stage's latest snapshot of it} (``latest_snapshots_by_stage``'s rule)."""
    return latest_snapshots_by_stage([stage], metrics=metrics).get(stage.pk, {})


def agreement_history(
    stage: Stage, *, metrics: Iterable[str] | None = None, max_points: int | None = 400
) -> dict[str, list[AgreementSnapshot]]:
    """{metric: snapshots oldest first}. With ``max_points``, long histories are thinned to about
    that many evenly spaced snapshots per metric (always keeping the first and the last)."""
    snapshots = AgreementSnapshot.objects.filter(stage=stage).exclude(metric=ANNOTATOR_METRIC)
    if metrics is not None:
        snapshots = snapshots.filter(metric__in=list(metrics))
    history: dict[str, list[AgreementSnapshot]] = defaultdict(list)
    for snapshot in snapshots.order_by("computed_at", "pk").defer("details"):
        history[snapshot.metric].append(snapshot)
    if max_points:
        for metric, rows in history.items():
            if len(rows) > max_points:
                step = len(rows) / (max_points - 1)
                keep = sorted({min(round(k * step), len(rows) - 1) for k in range(max_points)})
                history[metric] = [rows[k] for k in keep] + (
                    [rows[-1]] if keep[-1] != len(rows) - 1 else []
                )
    return dict(history)


def agreement_history_table(stage: Stage, *, limit: int = 8) -> list[dict[str, Any]]:
    """The latest ``limit`` computations, newest first, one row each:
    {"computed_at", "metrics": {metric: snapshot}, "n_items", "n_annotators", "n_annotations"}."""
    moments = list(
        AgreementSnapshot.objects.filter(stage=stage)
        .exclude(metric=ANNOTATOR_METRIC)
        .values_list("computed_at", flat=True)
        .distinct()
        .order_by("-computed_at")[:limit]
    )
    rows: dict[datetime, dict[str, Any]] = {}
    for snapshot in (
        AgreementSnapshot.objects.filter(stage=stage, computed_at__in=moments)
        .exclude(metric=ANNOTATOR_METRIC)
        .defer("details")
    ):
        row = rows.setdefault(
            snapshot.computed_at,
            {
                "computed_at": snapshot.computed_at,
                "metrics": {},
                "n_items": snapshot.n_items,
                "n_annotators": snapshot.n_annotators,
                "n_annotations": snapshot.n_annotations,
            },
        )
        row["metrics"][snapshot.metric] = snapshot
    return [rows[moment] for moment in sorted(rows, reverse=True)]


def agreement_history_rows(stage: Stage) -> QuerySet[AgreementSnapshot]:
    """Every agreement snapshot of the stage (for the CSV), oldest first."""
    return (
        AgreementSnapshot.objects.filter(stage=stage)
        .exclude(metric=ANNOTATOR_METRIC)
        .order_by("computed_at", "pk")
    )


# --- Progress and throughput ------------------------------------------------------------------------


@dataclass(frozen=True)
class StageProgress:
    items: int
    open: int
    resolving: int
    adjudication: int
    resolved: int
    discarded: int
    annotations: int
    annotators: int
    active_leases: int
    paused_annotators: int

    @property
    def done(self) -> int:
        return self.resolved + self.discarded

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.items) if self.items else 0


def stage_progress(stage: Stage) -> StageProgress:
    """Counts of the stage's items by state, its annotations and annotators (three queries)."""
    states = dict(
        ItemStage.objects.filter(stage=stage)
        .values_list("state")
        .annotate(count=Count("pk"))
        .order_by()
    )
    annotation_counts = Annotation.objects.filter(item_stage__stage=stage).aggregate(
        annotations=Count("pk"), annotators=Count("annotator_id", distinct=True)
    )
    leases = Assignment.objects.filter(stage=stage, status=Assignment.Status.ACTIVE).count()
    paused = Membership.objects.filter(
        project_id=stage.project_id, role=Role.ANNOTATOR, is_paused=True
    ).count()
    return StageProgress(
        items=sum(states.values()),
        open=states.get(ItemStage.State.OPEN, 0),
        resolving=states.get(ItemStage.State.RESOLVING, 0),
        adjudication=states.get(ItemStage.State.ADJUDICATION, 0),
        resolved=states.get(ItemStage.State.RESOLVED, 0),
        discarded=states.get(ItemStage.State.DISCARDED, 0),
        annotations=annotation_counts["annotations"],
        annotators=annotation_counts["annotators"],
        active_leases=leases,
        paused_annotators=paused,
    )


def _bucket_for(span: timedelta) -> tuple[str, timedelta]:
    """A truncation unit giving a readable number of bars for a time span."""
    if span <= timedelta(hours=6):
        return "minute", timedelta(minutes=1)
    if span <= timedelta(days=4):
        return "hour", timedelta(hours=1)
    if span <= timedelta(days=120):
        return "day", timedelta(days=1)
    return "week", timedelta(weeks=1)


@dataclass(frozen=True)
class ProgressSeries:
    """Per time bucket (start times, ascending): annotations submitted and items completed
    (resolved or discarded), with the bucket unit."""

    unit: str
    starts: list[datetime]
    annotations: list[int]
    completed: list[int]
    total_items: int

    @property
    def cumulative_annotations(self) -> list[int]:
        return np.cumsum(self.annotations).tolist() if self.annotations else []

    @property
    def cumulative_completed(self) -> list[int]:
        return np.cumsum(self.completed).tolist() if self.completed else []

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "bucket_start": start,
                "annotations": annotations,
                "items_completed": completed,
                "cumulative_annotations": total_annotations,
                "cumulative_items_completed": total_completed,
            }
            for start, annotations, completed, total_annotations, total_completed in zip(
                self.starts,
                self.annotations,
                self.completed,
                self.cumulative_annotations,
                self.cumulative_completed,
                strict=True,
            )
        ]


def stage_progress_series(stage: Stage) -> ProgressSeries:
    """Annotations and completed items per time bucket, aggregated in the database (three
    queries: the time span, then one GROUP BY each)."""
    annotations = Annotation.objects.filter(item_stage__stage=stage)
    completed = ItemStage.objects.filter(
        stage=stage,
        state__in=[ItemStage.State.RESOLVED, ItemStage.State.DISCARDED],
        resolved_at__isnull=False,
    )
    total_items = ItemStage.objects.filter(stage=stage).count()
    span = annotations.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is None:
        return ProgressSeries("hour", [], [], [], total_items)
    unit, step = _bucket_for(span["last"] - span["first"])
    per_bucket_annotations = dict(
        annotations.annotate(bucket=Trunc("created_at", unit))
        .values_list("bucket")
        .annotate(count=Count("pk"))
        .order_by()
    )
    per_bucket_completed = dict(
        completed.annotate(bucket=Trunc("resolved_at", unit))
        .values_list("bucket")
        .annotate(count=Count("pk"))
        .order_by()
    )
    keys = set(per_bucket_annotations) | set(per_bucket_completed)
    start, end = min(keys), max(keys)
    starts = []
    moment = start
    while moment <= end:
        starts.append(moment)
        # Buckets start at UTC minutes, hours, midnights or Mondays (USE_TZ with UTC, no DST),
        # so adding the fixed step stays on bucket starts.
        moment += step
    return ProgressSeries(
        unit=unit,
        starts=starts,
        annotations=[per_bucket_annotations.get(bucket, 0) for bucket in starts],
        completed=[per_bucket_completed.get(bucket, 0) for bucket in starts],
        total_items=total_items,
    )


# --- Per-annotator table ------------------------------------------------------------------------


@dataclass
class AnnotatorRow:
    user_id: int
    name: str
    is_member: bool
    is_paused: bool
    paused_reason: str
    quality: dict[str, Any]

    def get(self, key: str) -> Any:
        if key == "name":
            return self.name.lower()
        if key == "status":
            return (self.is_paused, len(self.quality.get("flags") or ()))
        if key == "flags":
            return len(self.quality.get("flags") or ())
        return self.quality.get(key)


#: Columns the per-annotator table can be sorted by (URL ?sort=...), with the default direction.
ANNOTATOR_SORTS = {
    "name": "asc",
    "n_annotations": "desc",
    "majority_agreement": "asc",
    "gold_agreement": "asc",
    "median_seconds": "asc",
    "skip_rate": "desc",
    "mean_abs_deviation": "desc",
    "flags": "desc",
}


def annotator_rows(
    stage: Stage, *, sort: str = "majority_agreement", descending: bool | None = None
) -> tuple[list[AnnotatorRow], AgreementSnapshot | None]:
    """The per-annotator table of the stage's latest refresh, joined with the live membership
    (pause state) and the annotators' names; annotators who joined since the refresh appear
    with empty figures. Sorted by ``sort`` (missing values last)."""
    snapshot = latest_snapshots(stage, metrics=[ANNOTATOR_METRIC]).get(ANNOTATOR_METRIC)
    records = {
        row["rater"]: row for row in (snapshot.details.get("annotators", []) if snapshot else [])
    }
    memberships = {
        membership.user_id: membership
        for membership in Membership.objects.filter(
            project_id=stage.project_id, role=Role.ANNOTATOR
        )
    }
    user_ids = {key for key in records if key >= 0} | set(memberships)
    names = dict(get_user_model().objects.filter(pk__in=user_ids).values_list("pk", "username"))
    external = _external_names(stage, [key for key in records if key < 0])
    rows = []
    for key in sorted(set(records) | set(memberships)):
        membership = memberships.get(key)
        rows.append(
            AnnotatorRow(
                user_id=key,
                name=names.get(key) or external.get(key) or f"rater {key}",
                is_member=membership is not None,
                is_paused=bool(membership and membership.is_paused),
                paused_reason=membership.paused_reason if membership else "",
                quality=records.get(key, {"flags": []}),
            )
        )
    if sort not in ANNOTATOR_SORTS:
        sort = "majority_agreement"
    if descending is None:
        descending = ANNOTATOR_SORTS[sort] == "desc"
    present = [row for row in rows if row.get(sort) is not None]
    missing = [row for row in rows if row.get(sort) is None]
    present.sort(key=lambda row: (row.get(sort), row.name.lower()), reverse=descending)
    return present + missing, snapshot


def _external_names(stage: Stage, keys: list[int]) -> dict[int, str]:
    if not keys:
        return {}
    names = (
        Annotation.objects.filter(item_stage__stage=stage, annotator__isnull=True)
        .values_list("external_rater", flat=True)
        .distinct()
    )
    wanted = set(keys)
    found = {}
    for name in names:
        key = external_rater_key(name)
        if key in wanted:
            found[key] = name
    return found


# --- Label distribution ---------------------------------------------------------------------------


def label_distribution(
    stage: Stage, snapshots: dict[str, AgreementSnapshot]
) -> list[dict[str, Any]]:
    """Per value: votes and share (from the latest refresh), resolved items with that value
    (live), and the per-category κ of the latest Fleiss snapshot."""
    primary = next((snapshots[metric] for metric in HEADLINE_METRICS if metric in snapshots), None)
    distribution = primary.details.get("vote_distribution", []) if primary else []
    kappa_rows = {}
    if "fleiss_kappa" in snapshots:
        kappa_rows = {
            json.dumps(row["category"]): row
            for row in snapshots["fleiss_kappa"].details.get("per_category", [])
        }
    resolved: Counter[str] = Counter()
    for value, count in (
        Resolution.objects.filter(item_stage__stage=stage)
        .exclude(status__in=[Resolution.Status.NEEDS_ADJUDICATION, Resolution.Status.INSUFFICIENT])
        .values_list("value")
        .annotate(count=Count("pk"))
        .order_by()
    ):
        resolved[json.dumps(value)] += count
    total_resolved = sum(resolved.values())
    rows = []
    for entry in distribution:
        key = json.dumps(entry["value"])
        kappa = kappa_rows.get(key, {})
        rows.append(
            {
                "value": entry["value"],
                "votes": entry["votes"],
                "share": entry["share"],
                "resolved": resolved.get(key, 0),
                "resolved_share": (resolved.get(key, 0) / total_resolved)
                if total_resolved
                else None,
                "kappa": kappa.get("kappa"),
                "kappa_z": kappa.get("z"),
                "kappa_note": kappa.get("note"),
            }
        )
    return rows


# --- Disagreements ------------------------------------------------------------------------------

#: Filters of the disagreement drill-down (URL ?show=...).
DISAGREEMENT_FILTERS = {
    "split": "Any disagreement",
    "ties": "Ties and items sent to a reviewer",
    "adjudicated": "Decided by a reviewer",
    "all": "All resolved items",
}


def disagreement_items(stage: Stage, *, show: str = "split") -> QuerySet[ItemStage]:
    """Item stages of the stage whose votes were not unanimous (or per ``show``), newest
    resolution first, with item and resolution joined."""
    # Never work in progress: an item open again (one more vote asked, or a route sent it
    # back) is not listed until its votes are final, so no vote is read while others still
    # cast or change theirs (the engine's rule, item_stages_with_final_votes).
    item_stages = item_stages_with_final_votes(
        ItemStage.objects.filter(stage=stage, resolution__isnull=False)
    ).select_related("item", "resolution", "resolution__decided_by")
    if show == "ties":
        item_stages = item_stages.filter(
            Q(resolution__status__in=[Resolution.Status.TIE, Resolution.Status.NEEDS_ADJUDICATION])
            | Q(state=ItemStage.State.ADJUDICATION)
        )
    elif show == "adjudicated":
        item_stages = item_stages.filter(resolution__status=Resolution.Status.ADJUDICATED)
    elif show != "all":
        item_stages = item_stages.exclude(resolution__status=Resolution.Status.UNANIMOUS)
    return item_stages.order_by("-resolution__computed_at", "-pk")


def votes_by_item(
    item_stages: Iterable[ItemStage], stage: Stage
) -> tuple[dict[int, dict[int, dict[str, Any]]], list[tuple[int, str]]]:
    """For a page of item stages: {item stage id: {rater key: {"value", "comment", "seconds"}}}
    and the raters who voted on any of them as (key, name), by name. One query for the
    annotations, one for the names."""
    kind = get_kind(stage.kind)
    ids = [item_stage.pk for item_stage in item_stages]
    votes: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    names: dict[int, str] = {}
    for item_stage_id, annotator_id, rater_name, username, payload, seconds in (
        annotations_visible(Annotation.objects.filter(item_stage_id__in=ids), None)
        .values_list(
            "item_stage_id",
            "annotator_id",
            "external_rater",
            "annotator__username",
            "payload",
            "seconds_spent",
        )
        .order_by("pk")
    ):
        key = annotator_id if annotator_id is not None else external_rater_key(rater_name)
        names[key] = username or rater_name or f"rater {key}"
        votes[item_stage_id][key] = {
            "value": kind.vote(payload),
            "comment": (payload or {}).get("comment") or "",
            "seconds": seconds,
        }
    raters = sorted(names.items(), key=lambda pair: pair[1].lower())
    return dict(votes), raters


def item_summary(item: Item) -> str:
    """A one-line rendering of an item's payload for tables."""
    payload = item.payload or {}
    if "sentence_a" in payload and "sentence_b" in payload:
        return f"{payload['sentence_a']} → {payload['sentence_b']}"
    for key in ("text", "sentence", "question", "context", "scenario"):
        if isinstance(payload.get(key), str):
            return payload[key]
    return json.dumps(payload, ensure_ascii=False)[:300]


def item_fields(item: Item) -> list[tuple[str, str]]:
    """The payload's fields for a full item view (the `gold` bookkeeping field left out)."""
    fields = []
    for key, value in (item.payload or {}).items():
        if key == "gold":
            continue
        fields.append(
            (
                key.replace("_", " "),
                value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
            )
        )
    return fields


# --- Adjudication ---------------------------------------------------------------------------------


def adjudication_queue(project: Project, *, reviewer: Any = None) -> QuerySet[ItemStage]:
    """Item stages of the project waiting for a reviewer, oldest first; with ``reviewer``,
    without those the reviewer annotated (nobody judges their own work)."""
    queue = ItemStage.objects.filter(stage__project=project, state=ItemStage.State.ADJUDICATION)
    if reviewer is not None:
        queue = queue.exclude(annotations__annotator=reviewer)
    return queue.select_related("item", "stage", "resolution").order_by("completed_at", "pk")


def annotated_by(item_stage: ItemStage, user: Any) -> bool:
    """Whether `user` annotated this item stage (in any round or phase)."""
    return item_stage.annotations.filter(annotator=user).exists()


def adjudication_recent(project: Project, limit: int = 10) -> QuerySet[Resolution]:
    """The project's latest reviewer decisions, with who decided."""
    return (
        Resolution.objects.filter(
            item_stage__stage__project=project, status=Resolution.Status.ADJUDICATED
        )
        .select_related("item_stage__item", "item_stage__stage", "decided_by")
        .order_by("-computed_at")[:limit]
    )


def adjudication_votes(item_stage: ItemStage) -> list[dict[str, Any]]:
    """The votes on an item stage for its reviewer, in submission order, pseudonymised as
    "Annotator 1, 2, …" so that the decision weighs the answers, not who gave them: the
    current round's, and on a stage with phases its last phase's (the ones the policy counts;
    the earlier phases' work is the kind's to show, e.g. the edits being voted on)."""
    kind = get_kind(item_stage.stage.kind)
    annotations = annotations_visible(
        Annotation.objects.filter(item_stage=item_stage, round=item_stage.round), None
    )
    phase = last_phase(item_stage.stage)
    if phase is not None:
        annotations = annotations.filter(phase=phase)
    rows = []
    for number, (payload, seconds, created_at) in enumerate(
        annotations.order_by("created_at", "pk").values_list(
            "payload", "seconds_spent", "created_at"
        ),
        start=1,
    ):
        rows.append(
            {
                "label": f"Annotator {number}",
                "value": kind.vote(payload),
                "comment": (payload or {}).get("comment") or "",
                "seconds": seconds,
                "created_at": created_at,
            }
        )
    return rows


def reviewer_projects(user: User) -> list[Project]:
    """Projects where the user may adjudicate, each with `waiting` (items in the queue)."""
    projects = Project.objects.filter(is_active=True)
    if not user.is_superuser:
        projects = projects.filter(
            memberships__user=user, memberships__role__in=[Role.REVIEWER, Role.ADMIN]
        )
    return list(
        projects.distinct().annotate(
            waiting=Count(
                "stages__item_stages",
                filter=Q(stages__item_stages__state=ItemStage.State.ADJUDICATION),
            )
        )
    )


def latest_agreement(project: Project) -> list[AgreementSnapshot]:
    """The latest snapshot of every (stage, metric) of a project (``latest_snapshots_by_stage``'s
    rule), by stage position then metric."""
    stages = {stage.pk: stage for stage in Stage.objects.filter(project=project)}
    latest = latest_snapshots_by_stage(stages.values())
    snapshots = []
    for stage_id, by_metric in latest.items():
        for snapshot in by_metric.values():
            snapshot.stage = stages[stage_id]
            snapshots.append(snapshot)
    return sorted(snapshots, key=lambda snapshot: (snapshot.stage.position, snapshot.metric))
