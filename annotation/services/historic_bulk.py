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

The staging table is read twice: once grouped by item (each item's count, sum and first
ordinal: the item stages' counters and means come from these sums, plus those of earlier
imports' annotations where an item stage already existed, never from re-reading the JSON just
written), and once by the annotations' insert. Sorts and hashes get :data:`WORK_MEM` for the
transaction (:func:`bulk_work_mem`).

The writes run with their foreign keys checked once (``common.foreign_keys_checked_once``),
not per row at COMMIT: the stage and the touched items are locked ``FOR KEY SHARE`` first,
earlier item stages ``FOR UPDATE`` before any annotation references them, and every other key
written is a row of this transaction or NULL (benchmarks/README.md, "Historic ratings import at
a million ratings", branch ``hr10``). Where the database user may not set
``session_replication_role``, PostgreSQL checks each row as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from django.db import connection
from django.utils import timezone

from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, ItemStage, Resolution, Stage
from annotation.services.common import (
    foreign_keys_checked_once,
    planner_statistics_refresh,
    row_locked_for_key_share,
)
from annotation.services.historic import HistoricImportResult, historic_import_check

#: Memory PostgreSQL may use for each sort or hash of a bulk import (this transaction only):
#: with the default 4 MB a million staged answers are sorted and grouped on disk.
WORK_MEM = "256MB"
_TOUCHED = "historic_bulk_touched"


@contextmanager
def bulk_work_mem() -> Iterator[None]:
    """:data:`WORK_MEM` for the statements inside (``set_config(..., true)``: this
    transaction only); the caller's value is put back after them. Should they raise, the
    rollback of the enclosing transaction or savepoint undoes the setting."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('work_mem'), set_config('work_mem', %s, true)", [WORK_MEM]
        )
        saved = cursor.fetchone()[0]
    yield
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('work_mem', %s, true)", [saved])


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
    with bulk_work_mem(), connection.cursor() as cursor:
        result = _values_write(cursor, stage, staging, field, policy, info)
        cursor.execute(f"DROP TABLE IF EXISTS {_TOUCHED}, {staging}")
    if result.annotations:
        planner_statistics_refresh(Annotation, ItemStage, Item)
    return result


def _values_write(
    cursor: Any, stage: Stage, staging: str, field: str, policy: str, info: Mapping[str, Any]
) -> HistoricImportResult:
    item = connection.ops.quote_name(Item._meta.db_table)
    now = timezone.now()
    # The first read of the staged answers: one row per item, with the item stage's counter
    # (``n``) and sum of values as they will be, once earlier annotations are added.
    cursor.execute(f"DROP TABLE IF EXISTS {_TOUCHED}")  # left by an import that raised
    cursor.execute(
        f"CREATE TEMPORARY TABLE {_TOUCHED} ON COMMIT DROP AS SELECT item_id,"
        " NULL::bigint AS item_stage_id, false AS earlier, count(*) AS n,"
        " sum(value)::numeric AS total, min(ordinal) AS first_ordinal"
        f" FROM {staging} GROUP BY item_id"
    )
    cursor.execute(f"ANALYZE {_TOUCHED}")  # temporary tables are never analysed on their own
    cursor.execute(f"SELECT coalesce(sum(n), 0) FROM {_TOUCHED}")
    total = int(cursor.fetchone()[0])
    if not total:
        return HistoricImportResult(0, 0, 0)
    cursor.execute(
        f"SELECT t.item_id FROM {_TOUCHED} t LEFT JOIN {item} i ON i.id = t.item_id"
        " AND i.project_id = %s WHERE i.id IS NULL ORDER BY 1 LIMIT 20",
        [stage.project_id],
    )
    foreign = [row[0] for row in cursor.fetchall()]
    if foreign:
        raise ApplicationError(
            "Some items are not items of this stage's project.", {"items": foreign}
        )
    # The writes reference the stage, the touched items, item stages this transaction
    # inserts or locks (below) and NULL otherwise: checked and locked once, not per row.
    with foreign_keys_checked_once(partial(_references_lock, stage=stage)):
        return _rows_write(cursor, stage, staging, field, policy, info, total, now)


def _references_lock(cursor: Any, *, stage: Stage) -> None:
    """Lock ``FOR KEY SHARE`` (what PostgreSQL's per-row check of a foreign key takes) the
    stage and every touched item, which the new item stages reference; raise when one has gone
    since the checks above (nothing is written then)."""
    q = connection.ops.quote_name
    item = q(Item._meta.db_table)
    if not row_locked_for_key_share(cursor, Stage, stage.pk):
        raise ApplicationError("The stage was removed during the import.")
    cursor.execute(
        f"SELECT (SELECT count(*) FROM {_TOUCHED}), count(*) FROM (SELECT 1 FROM {item} i"
        f" WHERE i.id IN (SELECT item_id FROM {_TOUCHED}) FOR KEY SHARE OF i) locked"
    )
    touched, locked = cursor.fetchone()
    if locked != touched:
        raise ApplicationError("Some items were removed during the import.")


def _rows_write(
    cursor: Any,
    stage: Stage,
    staging: str,
    field: str,
    policy: str,
    info: Mapping[str, Any],
    total: int,
    now: Any,
) -> HistoricImportResult:
    """The item stages, annotations and resolutions of ``_values_write``'s checked answers."""
    q = connection.ops.quote_name
    item_stage = q(ItemStage._meta.db_table)
    annotation, resolution = q(Annotation._meta.db_table), q(Resolution._meta.db_table)
    # Item stages already there (earlier imports), locked as the per-row path does; their
    # earlier current annotations join the counters and sums.
    cursor.execute(
        f"WITH found AS (SELECT x.item_id, x.id FROM {item_stage} x WHERE x.stage_id = %s"
        f" AND x.item_id IN (SELECT item_id FROM {_TOUCHED}) FOR UPDATE OF x)"
        f" UPDATE {_TOUCHED} t SET item_stage_id = found.id, earlier = true"
        " FROM found WHERE found.item_id = t.item_id",
        [stage.pk],
    )
    updated = cursor.rowcount
    if updated:
        cursor.execute(
            f"UPDATE {_TOUCHED} t SET n = t.n + e.n, total = t.total + e.total FROM"
            " (SELECT a.item_stage_id, count(*) AS n, sum((a.payload ->> %s)::numeric) AS total"
            f" FROM {annotation} a JOIN {_TOUCHED} d ON d.item_stage_id = a.item_stage_id"
            " WHERE a.is_current GROUP BY a.item_stage_id) e"
            " WHERE t.item_stage_id = e.item_stage_id",
            [field],
        )
    cursor.execute(
        f"WITH made AS (INSERT INTO {item_stage} (item_id, stage_id, state, target_count,"
        " submitted_count, leased_count, random_key, spread_rank, group_size, phase, round,"
        " gold, opened_at, completed_at, resolved_at)"
        " SELECT t.item_id, %s, %s, t.n, t.n, 0, 0, 0, 1, 0, 0, NULL, %s, %s, %s"
        f" FROM {_TOUCHED} t WHERE NOT t.earlier ORDER BY t.first_ordinal"
        " RETURNING item_id, id)"
        f" UPDATE {_TOUCHED} t SET item_stage_id = made.id FROM made"
        " WHERE made.item_id = t.item_id",
        [stage.pk, ItemStage.State.RESOLVED, now, now, now],
    )
    created = cursor.rowcount
    cursor.execute(f"ANALYZE {_TOUCHED}")
    # The second read of the staged answers.
    cursor.execute(
        f"INSERT INTO {annotation} (item_stage_id, external_rater, payload, client_info,"
        " created_at) SELECT t.item_stage_id, s.external_rater,"
        " jsonb_build_object(%s::text, s.value), %s::jsonb, %s"
        f" FROM {staging} s JOIN {_TOUCHED} t ON t.item_id = s.item_id"
        " ORDER BY s.ordinal",
        [field, json.dumps(info, ensure_ascii=False), now],
    )
    if updated:
        cursor.execute(
            f"UPDATE {item_stage} x SET target_count = t.n, submitted_count = t.n,"
            f" state = %s, resolved_at = %s FROM {_TOUCHED} t"
            " WHERE t.earlier AND x.id = t.item_stage_id",
            [ItemStage.State.RESOLVED, now],
        )
    # The mean as Python writes a float into JSON (5.0, not 5): float8's text is the shortest
    # round-trip form, as Python's repr. Sum and count are both exact as float8, so the IEEE
    # division rounds as Python's fsum(...) / len(...).
    mean = "(t.total::float8 / t.n::float8)"
    cursor.execute(
        f"INSERT INTO {resolution} (item_stage_id, value, status, outcome, votes,"
        " n_annotations, policy, decided_by_id, reason, computed_at)"
        f" SELECT t.item_stage_id, ({mean}::text || CASE WHEN {mean}::text ~ '^-?[0-9]+$'"
        " THEN '.0' ELSE '' END)::jsonb, %s, 'accept', '{}'::jsonb, t.n, %s, NULL, '', %s"
        f" FROM {_TOUCHED} t ORDER BY t.item_stage_id"
        " ON CONFLICT (item_stage_id) DO UPDATE SET value = EXCLUDED.value,"
        " status = EXCLUDED.status, outcome = EXCLUDED.outcome,"
        " n_annotations = EXCLUDED.n_annotations, policy = EXCLUDED.policy,"
        " computed_at = EXCLUDED.computed_at",
        [Resolution.Status.MEAN, policy or stage.resolution_policy, now],
    )
    cursor.execute(f"SELECT item_id, item_stage_id FROM {_TOUCHED}")
    stage_of = dict(cursor.fetchall())
    return HistoricImportResult(
        annotations=total,
        item_stages_created=created,
        item_stages_updated=updated,
        item_stage_ids=stage_of,
    )
