"""A stage's votes counted by the database: per item, how many votes each value got, reduced
to the distinct rows of that count matrix (``VoteCounts``). What a figure over many items
reads when it needs only those counts (the release datasheet's agreement,
``releases/services/figures.py``): Python holds one row per distinct vote pattern, never a
row per vote or per item.

The votes are the ones ``agreement.votes.stage_votes`` reads — completed item stages, the item
stage's current round, the last phase, the kind's vote (``agreement_vote_sql``), advisory raters
left out — with the same rater keys; both readers are tested equal (tests/agreement/
test_vote_counts.py). Off PostgreSQL, ``stage_votes`` is read and counted in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from django.db import connection, transaction

from agreement.stage_statistics import VoteCounts
from agreement.votes import (
    rater_key_sql,
    stage_categories,
    stage_votes,
    vote_filters_sql,
    vote_value_sql,
)
from annotation import sql
from annotation.advisory import advisory_annotators
from annotation.kinds import get_kind
from annotation.models import Annotation, Item, ItemStage, Stage


def stage_vote_counts(stage: Stage, *, item_statuses: Sequence[str]) -> VoteCounts:
    """The votes of ``stage`` on items whose status is one of ``item_statuses``, counted per
    item (see :class:`agreement.stage_statistics.VoteCounts`). Empty (no patterns) when the
    stage's kind has no agreement figures or no such item has a vote."""
    kind = get_kind(stage.kind)
    if kind.agreement.scale is None:
        return VoteCounts.from_votes(stage_votes(stage))
    categories = stage_categories(stage)
    if connection.vendor != "postgresql":
        votes = stage_votes(stage)
        ids = np.fromiter(
            ItemStage.objects.filter(stage=stage, item__status__in=list(item_statuses))
            .values_list("pk", flat=True)
            .iterator(chunk_size=5000),
            dtype=np.int64,
        )
        return VoteCounts.from_votes(votes.only_items(ids))
    rows, n_raters = _count_rows(stage, kind, categories, item_statuses)
    if categories is None:
        voted = [np.asarray(row, dtype=np.float64) for row, _ in rows]
        domain = np.unique(np.concatenate(voted)) if voted else np.zeros(0, dtype=np.float64)
        matrix = np.array(
            [
                np.bincount(np.searchsorted(domain, np.asarray(row, dtype=np.float64)),
                            minlength=len(domain))
                for row, _ in rows
            ],
            dtype=np.int64,
        ).reshape(len(rows), len(domain))  # fmt: skip
        labels: tuple[Any, ...] = tuple(float(value) for value in domain)
    else:
        labels = tuple(range(len(categories)))
        matrix = np.array(
            [
                np.bincount(np.asarray(row, dtype=np.int64), minlength=len(labels))
                for row, _ in rows
            ],
            dtype=np.int64,
        ).reshape(len(rows), len(labels))
    frequency = np.fromiter((count for _, count in rows), dtype=np.int64, count=len(rows))
    return VoteCounts(
        patterns=matrix,
        frequency=frequency,
        domain=labels,
        categories=None if categories is None else tuple(categories),
        n_raters=n_raters,
    )


def _count_rows(
    stage: Stage, kind: Any, categories: list[Any] | None, item_statuses: Sequence[str]
) -> tuple[list[tuple[list[Any], int]], int]:
    """(sorted votes of an item, how many items voted exactly so) per distinct pattern, and the
    number of distinct raters who voted. Hand-written (CONTRIBUTING.md, "SQL you can change
    safely"): two levels of grouping over the vote expression, which the ORM cannot say. The
    WHERE clause and the rater key are ``agreement.votes._votes_by_copy``'s."""
    if not categories and categories is not None:
        return [], 0
    a, s, i = sql.quoted(Annotation, "a"), sql.quoted(ItemStage, "s"), sql.quoted(Item, "i")
    params: dict[str, Any] = {
        "stage": stage.pk,
        "open": ItemStage.State.OPEN,
        "statuses": [str(status) for status in item_statuses],
    }
    value_sql = vote_value_sql(kind, categories, a, params)
    voted = "value <> 'NaN'::float8" if categories is None else "value >= 0"
    filters = vote_filters_sql(stage, a, s, params)
    advisory = advisory_annotators(stage)
    if advisory:
        filters += f" AND ({a.annotator_id} IS NULL OR NOT {a.annotator_id} = ANY(%(advisory)s))"
        params["advisory"] = sorted(advisory)
    query = f"""
        WITH votes AS MATERIALIZED (
            SELECT {a.item_stage_id}::int8 AS item,
                   {rater_key_sql(a)} AS rater,
                   {value_sql} AS value
            FROM {sql.table(Annotation)} a
                JOIN {sql.table(ItemStage)} s ON {s.id} = {a.item_stage_id}
                JOIN {sql.table(Item)} i ON {i.id} = {s.item_id}
            WHERE {s.stage_id} = %(stage)s AND {s.state} <> %(open)s AND {a.is_current}
                AND {i.status} = ANY(%(statuses)s){filters}
        ),
        per_item AS (
            SELECT array_agg(value ORDER BY value) AS pattern
            FROM votes WHERE {voted} GROUP BY item
        )
        SELECT pattern, count(*), (SELECT count(DISTINCT rater) FROM votes WHERE {voted})
        FROM per_item GROUP BY pattern ORDER BY pattern
    """
    with transaction.atomic(), connection.cursor() as cursor:
        # The per-item grouping holds one entry per item; keep it in memory (as stage_votes).
        cursor.execute("SET LOCAL work_mem = '64MB'")
        cursor.execute(query, params)
        fetched = cursor.fetchall()
    if not fetched:
        return [], 0
    return [(list(row[0]), int(row[1])) for row in fetched], int(fetched[0][2])
