"""Writes of a project's pipeline that plug-ins and the setup pages ask the engine for
(CONTRIBUTING.md, "Services own the transaction"): a stage moved or removed, with every
stage's settings checked again in the pipeline that results, the slot count of an
item-stage group raised (practice items and attention checks every participant meets), and an
item stage stopped early under its row lock (``item_stage_stop``: live stopping).

Each leaves the database as it was when it raises; callers never write the engine's tables
themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.models import Assignment, Item, ItemStage, Project, Stage
from annotation.phases import is_last
from annotation.services.common import enqueue_on_commit
from annotation.services.leases import _release_assignments
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


# --- Live stopping ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemStageStop:
    """What ``item_stage_stop`` did to one item stage.

    ``outcome``: ``"closed"`` (no lease was held: it waits for its resolution, enqueued after
    commit), ``"waiting"`` (stopped; its target closed at the answers stored plus the leases
    still held, which it waits for) or ``"unchanged"`` (nothing written; ``reason`` says why).
    ``target_before`` / ``target_after``: its slot count before and after."""

    item_stage_id: int
    outcome: str
    target_before: int
    target_after: int
    reason: str = ""

    @property
    def stopped(self) -> bool:
        return self.outcome != "unchanged"


@transaction.atomic
def item_stage_stop(*, item_stage_id: int, now: datetime | None = None) -> ItemStageStop:
    """Stop an open item stage early: collect no answer beyond the ones stored and the leases
    held now (a plug-in's stopping rule found its decision settled; ratings/stopping.py).

    Under the item stage's row lock (taken after its active leases', the order a submit takes
    them, so a submit in flight finishes first): leases already expired are released (their
    slots given back), the target becomes ``submitted_count + leased_count`` — the answers
    stored plus the unexpired leases held — and ``stopped_at`` is set. With no lease held the
    item stage closes at once (state RESOLVING, its resolution enqueued after commit, exactly
    as after its last answer); otherwise nobody else is offered it (``submitted + leased =
    target``) and:

    - a held lease that **submits** counts: its answer is stored as any other, and the last
      one closes the item stage for resolution (annotation/services/submit.py, unchanged);
    - a held lease that **ends without an answer** (expiry, skip, an admin's release) takes
      its slot with it (``target_count`` − 1: annotation/services/leases.py,
      ``_slots_give_back``), so no slot reopens; the last one to end closes the item stage.

    So ``submitted + leased ≤ target`` (the CHECK) and the counters hold exactly as with a
    fixed overlap, and the resolution reads the answers stored like any other. A new round or
    phase (a route back, a reopening, the next phase) starts with its full target again
    (``stopped_at`` cleared). Unchanged, with the reason: an item stage not open, already
    stopped, with no answer stored yet (nothing to decide from), or not in its stage's last
    phase (an earlier phase's answers are the next phase's input). Running it twice stops
    once. NotFound for an unknown id."""
    now = now or timezone.now()
    held = list(
        Assignment.objects.select_for_update()
        .filter(item_stage_id=item_stage_id, status=Assignment.Status.ACTIVE)
        .order_by("pk")
        .values_list("pk", "expires_at")
    )
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None:
        raise NotFound(f"There is no item stage {item_stage_id}.")
    target = item_stage.target_count

    def unchanged(reason: str) -> ItemStageStop:
        return ItemStageStop(item_stage_id, "unchanged", target, target, reason)

    if item_stage.state != ItemStage.State.OPEN:
        return unchanged(f"it is {item_stage.get_state_display().lower()}, not open")
    if item_stage.stopped_at is not None:
        return unchanged("it was stopped already")
    if item_stage.submitted_count == 0:
        return unchanged("no answer is stored yet")
    if not is_last(item_stage.stage, item_stage):
        return unchanged("it is not in its stage's last phase")
    expired = [pk for pk, expires_at in held if expires_at <= now]
    _release_assignments(expired, status=Assignment.Status.EXPIRED)
    item_stage.refresh_from_db(fields=["submitted_count", "leased_count"])
    item_stage.target_count = item_stage.submitted_count + item_stage.leased_count
    item_stage.stopped_at = now
    fields = ["target_count", "stopped_at"]
    if item_stage.leased_count == 0:
        item_stage.state = ItemStage.State.RESOLVING
        item_stage.completed_at = now
        fields += ["state", "completed_at"]
    item_stage.save(update_fields=fields)
    if item_stage.leased_count == 0:
        from annotation.tasks import resolve_item_stage

        enqueue_on_commit(resolve_item_stage, item_stage.pk)
        outcome = "closed"
    else:
        outcome = "waiting"
    return ItemStageStop(item_stage_id, outcome, target, item_stage.target_count)
