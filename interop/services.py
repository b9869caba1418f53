"""Writing another tool's export into a project (CONTRIBUTING.md, "Services"): items through
the engine's ``items_create``, answers as historic work through
``historic_annotations_import``, in one transaction.

:func:`interop_import` contract:

* ``stage`` is an inactive stage of ``project`` whose kind votes with ``value``
  (``interop.mapping.stage_check``); answers of one field are mapped to its payloads and checked
  by the kind (``interop.mapping``).
* A task whose external id (Label Studio's task id, or the id Rungwise wrote into ``meta``;
  Potato's instance id) is already an item of the project gets its answers; the other tasks
  become new items (payload: the task's data; ``source``: the tool), opened in the project's
  first active stage as any new item.
* People are stored as pseudonyms (``interop.pseudonyms``), never as the tool's ids.
* A person already answering an item in that stage (an earlier import) is a problem; a file
  imported into the stage before (``key``: its checksum) is refused with ``Conflict``.
* All or nothing: any problem (named by file, task id and field) raises ``ApplicationError``
  and the database is as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from django.db import transaction

from annotation import api as engine
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Item, Project, Stage
from interop.mapping import MappedAnswer, answers_map, field_choose, resolver, stage_check
from interop.pseudonyms import rater_pseudonym
from interop.sources import Problems, SourceExport


@dataclass(frozen=True)
class InteropImportResult:
    tool: str
    field: str
    tasks: int
    items_created: int
    items_existing: int
    annotations: int
    raters: int
    skipped: Mapping[str, int] = dataclasses.field(default_factory=dict)


def result_summary(result: InteropImportResult) -> str:
    """What an import wrote, in a sentence (the page's message, the command's output)."""
    skipped = ", ".join(f"{reason} ({count})" for reason, count in sorted(result.skipped.items()))
    return (
        f"Imported {result.annotations} answer{'s' if result.annotations != 1 else ''} to "
        f"{result.field} by {result.raters} rater{'s' if result.raters != 1 else ''} on "
        f"{result.tasks} tasks ({result.items_created} new items, {result.items_existing} "
        f"already here)." + (f" Not imported: {skipped}." if skipped else "")
    )


@transaction.atomic
def interop_import(
    *, project: Project, stage: Stage, export: SourceExport, field: str | None, key: str
) -> InteropImportResult:
    """Write ``export`` into ``project``: its tasks as items, the answers of ``field`` (or its
    only field) as historic annotations of ``stage`` (module docstring: the contract)."""
    if stage.project_id != project.pk:
        raise ApplicationError("That stage is not a stage of this project.", {"stage": stage.pk})
    stage_check(stage)
    chosen = field_choose(export, field)
    mapped, skipped = answers_map(export, stage=stage, field=chosen)
    ids = [task.external_id for task in export.tasks]
    existing = dict(
        Item.objects.filter(project=project, external_id__in=ids).values_list("external_id", "pk")
    )
    new_rows = [
        {"external_id": task.external_id, "payload": task.data, "source": export.tool}
        for task in export.tasks
        if task.external_id not in existing
    ]
    created = engine.items_create(project=project, rows=new_rows) if new_rows else []
    item_of = {**existing, **{item.external_id: item.pk for item in created}}
    raters = {
        answer.rater: rater_pseudonym(project, tool=export.tool, user_id=answer.rater)
        for answer in mapped
    }
    if Annotation.objects.filter(item_stage__stage=stage, client_info__import_key=key).exists():
        # The engine refuses it too (historic_annotations_import); asked first here so that a
        # file sent twice is told so, not as one overlap per answer.
        raise Conflict(
            f"This export was imported into {stage.name} already; nothing was imported.",
            {"stage": stage.slug},
        )
    _refuse_raters_present(stage, export, mapped, item_of, raters)
    annotations = [
        engine.HistoricAnnotation(
            item_id=item_of[answer.external_id],
            payload=answer.payload,
            external_rater=raters[answer.rater],
        )
        for answer in mapped
    ]
    engine.historic_annotations_import(
        stage=stage,
        annotations=annotations,
        resolve=resolver(stage),
        client_info={"via": "interop", "tool": export.tool, "field": chosen},
        key=key,
    )
    return InteropImportResult(
        tool=export.tool,
        field=chosen,
        tasks=len(export.tasks),
        items_created=len(created),
        items_existing=len(existing),
        annotations=len(annotations),
        raters=len({name for name in raters.values() if name}),
        skipped={**export.skipped, **skipped},
    )


def _refuse_raters_present(
    stage: Stage,
    export: SourceExport,
    mapped: list[MappedAnswer],
    item_of: Mapping[str, int],
    raters: Mapping[str, str],
) -> None:
    """A problem per (item, person) already answered in ``stage`` by an earlier import."""
    named = {name for name in raters.values() if name}
    if not named:
        return
    present = set(
        Annotation.objects.filter(
            item_stage__stage=stage,
            item_stage__item_id__in=set(item_of.values()),
            external_rater__in=named,
        ).values_list("item_stage__item_id", "external_rater")
    )
    if not present:
        return
    problems = Problems()
    source_of = {task.external_id: task.source_id for task in export.tasks}
    for answer in mapped:
        if (item_of[answer.external_id], raters[answer.rater]) in present:
            problems.add(
                export.files[0],
                source_of[answer.external_id],
                "",
                f"user {answer.rater} answered this item in {stage.name} already (an earlier "
                "import)",
            )
    problems.raise_any("The answers overlap an earlier import")
