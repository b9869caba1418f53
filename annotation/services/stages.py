"""Writes of a project's pipeline that plug-ins and the setup pages ask the engine for
(CONTRIBUTING.md, "Services own the transaction"): a stage moved or removed, with every
stage's settings checked again in the pipeline that results, and the slot count of an
item-stage group raised (practice items and attention checks every participant meets).

Each leaves the database as it was when it raises; callers never write the engine's tables
themselves.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import ProtectedError

from annotation.errors import ApplicationError, Conflict
from annotation.models import Item, ItemStage, Project, Stage
from annotation.services.setup import STAGE_SETTINGS, stage_settings_clean


def pipeline_check(project: Project) -> None:
    """Every stage's settings checked again in the pipeline's current order and membership
    (``stage_settings_clean``), after a stage moved or went: a 'back' route now pointing
    forward, a route or a rule naming a removed stage raise ApplicationError naming the stage
    and the setting (``extra`` keys ``<stage slug>.<setting>``); the caller's transaction then
    leaves everything as it was."""
    for stage in Stage.objects.filter(project=project).order_by("position"):
        try:
            stage_settings_clean(
                project=project,
                slug=stage.slug,
                kind=stage.kind,
                overlap=stage.overlap,
                settings={key: getattr(stage, key) for key in STAGE_SETTINGS},
            )
        except ApplicationError as error:
            raise ApplicationError(
                f"{stage.name}: {error.message} Change that stage's settings first.",
                {f"{stage.slug}.{key}": value for key, value in error.extra.items()},
                status=error.status,
            ) from None


@transaction.atomic
def stage_move(*, stage: Stage, direction: str) -> Stage:
    """Swap ``stage`` with its neighbour (``direction`` "up" or "down"), then check every
    stage in the new order (``pipeline_check``); refused (nothing moved) when a setting no
    longer works, e.g. a 'back' route that would point to a later stage.

    Locking: the project's row and its stages' rows are locked while positions change, so
    two moves in one project run one after the other."""
    if direction not in ("up", "down"):
        raise ApplicationError("Move a stage up or down.", {"direction": direction[:10]})
    project = Project.objects.select_for_update().get(pk=stage.project_id)
    stages = list(Stage.objects.select_for_update().filter(project=project).order_by("position"))
    index = next(n for n, other in enumerate(stages) if other.pk == stage.pk)
    neighbour_index = index - 1 if direction == "up" else index + 1
    if not 0 <= neighbour_index < len(stages):
        raise ApplicationError(
            f"{stage.name} is already the {'first' if direction == 'up' else 'last'} stage.",
            {"direction": direction},
        )
    moving, neighbour = stages[index], stages[neighbour_index]
    spare = max(other.position for other in stages) + 1  # (project, position) is unique
    first, second = moving.position, neighbour.position
    Stage.objects.filter(pk=moving.pk).update(position=spare)
    Stage.objects.filter(pk=neighbour.pk).update(position=first)
    Stage.objects.filter(pk=moving.pk).update(position=second)
    pipeline_check(project)
    moving.refresh_from_db()
    return moving


@transaction.atomic
def stage_remove(*, stage: Stage) -> None:
    """Delete a stage no item has entered yet (one with items is closed instead: its work is
    kept), then check the others without it (``pipeline_check``): a route or a rule that
    names it refuses the removal and names itself. A stage other records still point to
    (a plug-in's, protected by their foreign key) is a Conflict."""
    locked = Stage.objects.select_for_update().get(pk=stage.pk)
    if ItemStage.objects.filter(stage=locked).exists():
        raise Conflict(
            f"Items have entered {locked.name}; close it (Open for work: Closed) instead of "
            f"removing it, so that their work is kept.",
            {"stage": locked.slug},
        )
    project = locked.project
    try:
        locked.delete()
    except ProtectedError:
        raise Conflict(
            f"{locked.name} is used elsewhere (a study runs on it); remove that first.",
            {"stage": locked.slug},
        ) from None
    pipeline_check(project)


@transaction.atomic
def item_stages_target_set(*, stage: Stage, purpose: str, target_count: int) -> int:
    """Set the slot count (``target_count``) of ``stage``'s open item stages whose item has
    ``purpose`` (``Item.Purpose``), e.g. practice items every participant of a study meets.
    Returns how many item stages changed. Open item stages only: decided ones keep theirs."""
    if purpose not in Item.Purpose.values:
        raise ApplicationError(f"Unknown item purpose {purpose!r}.", {"purpose": purpose[:40]})
    return ItemStage.objects.filter(
        stage=stage, item__purpose=purpose, state=ItemStage.State.OPEN
    ).update(target_count=target_count)
