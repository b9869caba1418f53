"""Historic annotations: answers given elsewhere (an earlier study, a benchmark's own reviewers)
written into a project as the engine writes its own, so that counters, resolutions and exports
read them like any other annotation. Plug-ins call it through ``annotation.api``; none writes
``Annotation``, ``ItemStage`` or ``Resolution`` rows itself.

The contract of :func:`historic_annotations_import`:

* The stage is **inactive** (``Stage.is_active`` False): no annotator is ever offered it
  (``access_stage_for_annotator`` refuses it), so its item stages never hold a lease.
* Every annotation has no assignment and no annotator; ``external_rater`` names the source's
  rater or is empty (anonymous ratings). A named rater answers an item stage once (the
  database's ``annotation_external_rater_once``). ``version`` 1, current, ``item_version`` empty
  (the answer judged the item as its source published it, not a version recorded here),
  ``round`` and ``phase`` 0.
* Each item stage touched is written **resolved**, with ``target_count = submitted_count`` = its
  current annotations after the import (imports add up: a second import into the same item
  stage raises both), ``leased_count`` 0, and one Resolution from the plug-in's ``resolve``
  over all of the item stage's annotations (earlier imports included), so the engine's
  invariants (counters equal the rows; a resolved item stage has its resolution) hold.
* Idempotence: given a ``key`` (e.g. a file's checksum), an import whose key was already
  written into the stage is refused with ``Conflict`` and writes nothing; the key is kept in
  each annotation's ``client_info["import_key"]``.
* Items must belong to the stage's project. The items' own status is the plug-in's business.
* All or nothing: one transaction. On PostgreSQL the annotations go in with COPY (about ten
  times faster than ``bulk_create`` for ExpliCa's 72,000 ratings, whose time goes into building
  and quoting the statement), then the planner statistics are refreshed; elsewhere
  ``bulk_create``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, ItemStage, Resolution, Stage
from annotation.services.common import planner_statistics_refresh

BULK_BATCH = 5000
#: Ids per ``IN`` list: PostgreSQL's protocol carries at most 65,535 parameters a statement.
IDS_PER_STATEMENT = 50_000


def _chunks(ids: list[int]) -> list[list[int]]:
    """``ids`` in slices that one statement's parameters can carry."""
    return [
        ids[start : start + IDS_PER_STATEMENT] for start in range(0, len(ids), IDS_PER_STATEMENT)
    ]


@dataclass(frozen=True)
class HistoricAnnotation:
    """One answer from elsewhere: the item (its id), what was answered (the kind's payload) and
    who answered, as the source names them ("" for anonymous)."""

    item_id: int
    payload: Mapping[str, Any]
    external_rater: str = ""


@dataclass(frozen=True)
class HistoricResolution:
    """How a plug-in resolves one item stage from its historic annotations' payloads. ``policy``
    is recorded on the Resolution ("" = the stage's ``resolution_policy``)."""

    value: Any
    outcome: str = "accept"
    status: str = Resolution.Status.MEAN
    policy: str = ""


@dataclass(frozen=True)
class HistoricImportResult:
    annotations: int
    item_stages_created: int
    item_stages_updated: int
    item_stage_ids: dict[int, int] = field(default_factory=dict)  # item id -> item stage id


def historic_import_check(
    *, stage: Stage, client_info: Mapping[str, Any] | None, key: str | None
) -> dict[str, Any]:
    """The checks every historic import makes before it writes: the stage is inactive and
    ``key`` (when given) was not imported into it before. Returns the ``client_info`` to store
    on each annotation (with ``import_key``). Raises ApplicationError / ``Conflict``."""
    if stage.is_active:
        raise ApplicationError(
            f"Historic annotations go into an inactive stage; {stage.slug} is active.",
            {"stage": stage.slug},
        )
    info: dict[str, Any] = dict(client_info or {})
    if key is not None:
        info["import_key"] = key
        if Annotation.objects.filter(item_stage__stage=stage, client_info__import_key=key).exists():
            raise Conflict(
                f"These annotations were imported into {stage.slug} already.",
                {"stage": stage.slug, "import_key": key},
            )
    return info


@transaction.atomic
def historic_annotations_import(
    *,
    stage: Stage,
    annotations: Sequence[HistoricAnnotation],
    resolve: Callable[[Sequence[Mapping[str, Any]]], HistoricResolution],
    client_info: Mapping[str, Any] | None = None,
    key: str | None = None,
) -> HistoricImportResult:
    """Write ``annotations`` into the inactive ``stage`` (module docstring: the contract).

    ``resolve`` receives the payloads of all of an item stage's current annotations (earlier
    imports first, then this import's in the given order) and returns its resolution.
    ``client_info`` is stored on every annotation (with ``import_key`` when ``key`` is given).
    Raises ApplicationError for an active stage or an item of another project, ``Conflict``
    for a key already imported; nothing is written then."""
    info = historic_import_check(stage=stage, client_info=client_info, key=key)
    per_item: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for annotation in annotations:
        per_item[annotation.item_id].append(annotation.payload)
    if not per_item:
        return HistoricImportResult(0, 0, 0)
    item_ids = list(per_item)
    foreign = set(per_item) - {
        pk
        for chunk in _chunks(item_ids)
        for pk in Item.objects.filter(project_id=stage.project_id, pk__in=chunk).values_list(
            "pk", flat=True
        )
    }
    if foreign:
        raise ApplicationError(
            f"{len(foreign)} item(s) are not items of this stage's project.",
            {"items": sorted(foreign)[:20]},
        )
    now = timezone.now()
    existing = {
        item_id: pk
        for chunk in _chunks(item_ids)
        for item_id, pk in ItemStage.objects.select_for_update()
        .filter(stage=stage, item_id__in=chunk)
        .values_list("item_id", "pk")
    }
    earlier: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    if existing:
        for chunk in _chunks(list(existing.values())):
            for item_stage_id, payload in (
                Annotation.objects.filter(item_stage_id__in=chunk)
                .order_by("pk")
                .values_list("item_stage_id", "payload")
            ):
                earlier[item_stage_id].append(payload)
    new_stages = [
        ItemStage(
            item_id=item_id,
            stage=stage,
            state=ItemStage.State.RESOLVED,
            target_count=len(payloads),
            submitted_count=len(payloads),
            random_key=0,
            completed_at=now,
            resolved_at=now,
        )
        for item_id, payloads in per_item.items()
        if item_id not in existing
    ]
    ItemStage.objects.bulk_create(new_stages, batch_size=BULK_BATCH)
    stage_of = {**existing, **{row.item_id: row.pk for row in new_stages}}
    _annotations_insert(
        [(stage_of[a.item_id], a.external_rater, a.payload) for a in annotations], info, now
    )
    updated, resolutions = [], []
    for item_id, payloads in per_item.items():
        item_stage_id = stage_of[item_id]
        every = [*earlier.get(item_stage_id, []), *payloads]
        if item_id in existing:
            updated.append(
                ItemStage(
                    pk=item_stage_id,
                    target_count=len(every),
                    submitted_count=len(every),
                    state=ItemStage.State.RESOLVED,
                    resolved_at=now,
                )
            )
        decided = resolve(every)
        resolutions.append(
            Resolution(
                item_stage_id=item_stage_id,
                value=decided.value,
                status=decided.status,
                outcome=decided.outcome,
                n_annotations=len(every),
                policy=decided.policy or stage.resolution_policy,
            )
        )
    if updated:
        ItemStage.objects.bulk_update(
            updated, ["target_count", "submitted_count", "state", "resolved_at"], batch_size=1000
        )
    Resolution.objects.bulk_create(
        resolutions,
        batch_size=BULK_BATCH,
        update_conflicts=True,
        unique_fields=["item_stage"],
        update_fields=["value", "status", "outcome", "n_annotations", "policy", "computed_at"],
    )
    return HistoricImportResult(
        annotations=len(annotations),
        item_stages_created=len(new_stages),
        item_stages_updated=len(updated),
        item_stage_ids=stage_of,
    )


def _annotations_insert(
    rows: Sequence[tuple[int, str, Mapping[str, Any]]], info: Mapping[str, Any], now: datetime
) -> None:
    """Insert historic annotations (item stage id, external rater, payload): COPY on PostgreSQL,
    ``bulk_create`` elsewhere (module docstring)."""
    if connection.vendor != "postgresql":
        Annotation.objects.bulk_create(
            (
                Annotation(
                    item_stage_id=item_stage_id,
                    external_rater=rater,
                    payload=dict(payload),
                    client_info=dict(info),
                    created_at=now,
                )
                for item_stage_id, rater, payload in rows
            ),
            batch_size=BULK_BATCH,
        )
        return
    # COPY, not the ORM: see the module docstring. The columns left out take their database
    # defaults (version 1, current, round and phase 0, no assignment, annotator or item version).
    info_text = json.dumps(dict(info), ensure_ascii=False)
    table = connection.ops.quote_name(Annotation._meta.db_table)
    columns = ", ".join(
        connection.ops.quote_name(name)
        for name in ("item_stage_id", "external_rater", "payload", "client_info", "created_at")
    )
    with connection.cursor() as cursor:
        with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for item_stage_id, rater, payload in rows:
                copy.write_row(
                    (item_stage_id, rater, json.dumps(payload, ensure_ascii=False), info_text, now)
                )
    planner_statistics_refresh(Annotation, ItemStage, Item)
