"""Historic annotations in bulk on PostgreSQL: the contract of
``annotation.services.historic.historic_annotations_import`` (its module docstring) kept by
set-based statements instead of Python objects per annotation, for imports of a million
answers.

The caller (a plug-in, through ``annotation.api``) puts its checked answers into a table of its
transaction (:func:`staging_create` makes one: ``ordinal``, ``item_id``, ``external_rater``,
``value``, filled by COPY) and calls :func:`historic_values_import`. Each answer becomes the
payload ``{field: value}`` (a whole number); each touched item stage's resolution is the mean
of ``field`` over all of its current annotations (earlier imports included), as a float, the
same value ``math.fsum(values) / len(values)`` gives (what a plug-in's ``resolve`` for policy
"mean" returns: ratings.historic._historic_mean). Annotations are inserted in ``ordinal`` order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.db import connection
from django.utils import timezone

from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Resolution, Stage
from annotation.services.common import planner_statistics_refresh
from annotation.services.historic import HistoricImportResult, historic_import_check


def staging_create(name: str) -> str:
    """Create the temporary table ``name`` (dropped at commit) that
    :func:`historic_values_import` reads; returns its quoted name. PostgreSQL only."""
    table = connection.ops.quote_name(name)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {table} (ordinal bigint NOT NULL, item_id bigint NOT NULL,"
            " external_rater text NOT NULL, value integer NOT NULL) ON COMMIT DROP"
        )
    return table


def historic_values_import(
    *,
    stage: Stage,
    staging: str,
    field: str,
    policy: str,
    client_info: Mapping[str, Any] | None = None,
    key: str | None = None,
) -> HistoricImportResult:
    """Write the answers of the table ``staging`` (:func:`staging_create`) into the inactive
    ``stage`` (module docstring); must run inside the caller's transaction. ``policy`` is
    recorded on each Resolution (status "mean", outcome "accept"). Raises as
    ``historic_annotations_import`` does (an active stage, an item of another project, a
    ``key`` already imported); nothing is written then. The staging table is dropped once
    read (also at the end of the transaction, whatever happens)."""
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        raise ApplicationError("The bulk historic import runs on PostgreSQL, in a transaction.")
    info = historic_import_check(stage=stage, client_info=client_info, key=key)
    q = connection.ops.quote_name
    item, item_stage = q(Item._meta.db_table), q(ItemStage._meta.db_table)
    annotation, resolution = q(Annotation._meta.db_table), q(Resolution._meta.db_table)
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {staging}")  # temporary tables are never analysed on their own
        cursor.execute(f"SELECT count(*) FROM {staging}")
        total = cursor.fetchone()[0]
        if not total:
            cursor.execute(f"DROP TABLE {staging}")
            return HistoricImportResult(0, 0, 0)
        cursor.execute(
            f"SELECT DISTINCT s.item_id FROM {staging} s LEFT JOIN {item} i ON i.id = s.item_id"
            " AND i.project_id = %s WHERE i.id IS NULL ORDER BY 1 LIMIT 20",
            [stage.project_id],
        )
        foreign = [row[0] for row in cursor.fetchall()]
        if foreign:
            raise ApplicationError(
                "Some items are not items of this stage's project.", {"items": foreign}
            )
        # The touched item stages, from their own rows (statistics of just-written tables
        # are stale): those already there (earlier imports), locked as the per-row path does,
        # then those made here.
        cursor.execute(
            "CREATE TEMPORARY TABLE historic_bulk_touched (item_id bigint PRIMARY KEY,"
            " item_stage_id bigint NOT NULL) ON COMMIT DROP"
        )
        cursor.execute(
            "INSERT INTO historic_bulk_touched SELECT x.item_id, x.id"
            f" FROM {item_stage} x WHERE x.stage_id = %s AND x.item_id IN"
            f" (SELECT item_id FROM {staging}) FOR UPDATE OF x",
            [stage.pk],
        )
        updated = cursor.rowcount
        cursor.execute(
            f"WITH made AS (INSERT INTO {item_stage} (item_id, stage_id, state, target_count,"
            " submitted_count, leased_count, random_key, spread_rank, group_size, phase, round,"
            " gold, opened_at, completed_at, resolved_at)"
            " SELECT s.item_id, %s, %s, count(*), count(*), 0, 0, 0, 1, 0, 0, NULL, %s, %s, %s"
            f" FROM {staging} s WHERE NOT EXISTS (SELECT 1 FROM historic_bulk_touched t"
            " WHERE t.item_id = s.item_id)"
            " GROUP BY s.item_id ORDER BY min(s.ordinal) RETURNING item_id, id)"
            " INSERT INTO historic_bulk_touched SELECT item_id, id FROM made",
            [stage.pk, ItemStage.State.RESOLVED, now, now, now],
        )
        created = cursor.rowcount
        cursor.execute("ANALYZE historic_bulk_touched")
        cursor.execute(
            f"INSERT INTO {annotation} (item_stage_id, external_rater, payload, client_info,"
            " created_at) SELECT t.item_stage_id, s.external_rater,"
            " jsonb_build_object(%s::text, s.value), %s::jsonb, %s"
            f" FROM {staging} s JOIN historic_bulk_touched t ON t.item_id = s.item_id"
            " ORDER BY s.ordinal",
            [field, json.dumps(info, ensure_ascii=False), now],
        )
        # Counters and means over all current annotations of the touched item stages.
        cursor.execute(
            "CREATE TEMPORARY TABLE historic_bulk_means ON COMMIT DROP AS"
            " SELECT a.item_stage_id, count(*) AS n,"
            # Both exact as float8, so IEEE division rounds as Python's fsum(...) / len(...).
            " sum((a.payload ->> %s)::numeric)::float8 / count(*)::float8 AS mean"
            f" FROM {annotation} a JOIN historic_bulk_touched t"
            " ON t.item_stage_id = a.item_stage_id"
            " GROUP BY a.item_stage_id",
            [field],
        )
        if updated:
            cursor.execute(
                f"UPDATE {item_stage} x SET target_count = m.n, submitted_count = m.n,"
                " state = %s, resolved_at = %s FROM historic_bulk_means m"
                " WHERE x.id = m.item_stage_id AND x.opened_at <> %s",  # not the ones just made
                [ItemStage.State.RESOLVED, now, now],
            )
        # The mean as Python writes a float into JSON (5.0, not 5): float8's text is the
        # shortest round-trip form, as Python's repr.
        cursor.execute(
            f"INSERT INTO {resolution} (item_stage_id, value, status, outcome, votes,"
            " n_annotations, policy, decided_by_id, reason, computed_at)"
            " SELECT m.item_stage_id, (m.mean::text || CASE WHEN m.mean::text ~ '^-?[0-9]+$'"
            " THEN '.0' ELSE '' END)::jsonb, %s, 'accept', '{}'::jsonb, m.n, %s, NULL, '', %s"
            " FROM historic_bulk_means m ORDER BY m.item_stage_id"
            " ON CONFLICT (item_stage_id) DO UPDATE SET value = EXCLUDED.value,"
            " status = EXCLUDED.status, outcome = EXCLUDED.outcome,"
            " n_annotations = EXCLUDED.n_annotations, policy = EXCLUDED.policy,"
            " computed_at = EXCLUDED.computed_at",
            [Resolution.Status.MEAN, policy or stage.resolution_policy, now],
        )
        cursor.execute("SELECT item_id, item_stage_id FROM historic_bulk_touched")
        stage_of = dict(cursor.fetchall())
        cursor.execute(f"DROP TABLE historic_bulk_touched, historic_bulk_means, {staging}")
    planner_statistics_refresh(Annotation, ItemStage, Item)
    return HistoricImportResult(
        annotations=total,
        item_stages_created=created,
        item_stages_updated=updated,
        item_stage_ids=stage_of,
    )
