"""Writes of the quality app (CONTRIBUTING.md, "Services own the transaction"):

- ``quality_rule_set``: a stage's thresholds;
- ``quality_evaluate``: after an answer (the annotator gate's ``after_submit``, quality/gate.py,
  inside the submit's transaction): act when the stage's rule is met;
- ``quality_action_take``: a researcher pauses (or screens out) someone by hand;
- ``quality_action_undo``: the pause or screen-out taken back;
- ``quality_action_withdraw``: the person's earlier work in the stage withdrawn through the
  engine's one withdrawal rule (``annotation.api.annotations_withdraw``: answers on item stages
  still open are taken back and their slots reopened; answers a decision was made with stay).

An action on a study participant (crowd) is a screen-out through crowd's own path
(``crowd.services.participant_screen_out``: the session ends with the screen-out code, the
study page suggests a rejection); on anyone else it is a pause on the stage: they get no more
of its items (quality/gate.py refuses them, the item screen says why), their leases there go
back to the pool.
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation import api as engine
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.models import Membership, Role, Stage
from crowd import services as crowd
from quality import selectors, stats
from quality.models import QualityAction, QualityRule


@transaction.atomic
def quality_rule_set(
    *, stage: Stage, acts: bool, min_gold: int, min_accuracy: float, withdraw: bool
) -> QualityRule:
    """Set the stage's thresholds (``min_gold`` ≥ 1, ``min_accuracy`` a share 0–1). Whoever the
    new rule already covers is acted on at their next answer, not now."""
    if min_gold < 1:
        raise ApplicationError("Ask for at least one gold answer.", {"min_gold": "at least 1"})
    if not 0 <= min_accuracy <= 1:
        raise ApplicationError(
            "The accuracy bound is a share between 0 and 1.", {"min_accuracy": "0–1"}
        )
    rule, _ = QualityRule.objects.update_or_create(
        stage=stage,
        defaults={
            "project_id": stage.project_id,
            "acts": acts,
            "min_gold": min_gold,
            "min_accuracy": min_accuracy,
            "withdraw": withdraw,
        },
    )
    return rule


def _reason(total: int, right: int, interval: stats.Interval, bound: float) -> str:
    return (
        f"gold accuracy {right} of {total} ({right / total:.0%}; 95 % interval "
        f"{interval.low:.0%}–{interval.high:.0%}) is below {bound:.0%}"
    )


def quality_evaluate(*, stage: Stage, annotator_id: int) -> QualityAction | None:
    """Act on an annotator when the stage's rule acts and is met: at least ``min_gold`` gold
    answers and the Wilson interval of their accuracy wholly below ``min_accuracy``. Nothing
    happens while an action is in force, nor — after a researcher undid one — before the
    person gave ``min_gold`` more gold answers than the undone action read (an undo sticks
    until there is new evidence). Returns the new action or None.

    Called inside the submit's transaction (quality/gate.py, ``after_submit``): people on
    stages without an acting rule cost one query."""
    rule = QualityRule.objects.filter(stage_id=stage.pk, acts=True).first()
    if rule is None or selectors.active_action(stage.pk, annotator_id) is not None:
        return None
    total, right = selectors.gold_counts(stage, annotator_id)
    interval = stats.wilson(right, total)
    if total < rule.min_gold or interval is None or interval.high >= rule.min_accuracy:
        return None
    undone = selectors.last_undone(stage.pk, annotator_id)
    if undone is not None and total < int(undone.figures.get("gold", 0)) + rule.min_gold:
        return None
    figures = {"gold": total, "right": right, "low": interval.low, "high": interval.high}
    try:
        # A savepoint: two answers of one person acted on at once make one action.
        with transaction.atomic():
            return _act(
                stage=stage,
                annotator_id=annotator_id,
                reason=_reason(total, right, interval, rule.min_accuracy),
                figures={**figures, "bound": rule.min_accuracy},
                by=None,
                withdraw=rule.withdraw,
            )
    except IntegrityError:
        return None


def _act(
    *,
    stage: Stage,
    annotator_id: int,
    reason: str,
    figures: dict[str, Any],
    by: Any,
    withdraw: bool,
) -> QualityAction:
    project = stage.project
    participant = crowd.participant_screen_out(
        annotator_id=annotator_id, project=project, reason=reason, withdraw=withdraw
    )
    action = QualityAction(
        stage=stage,
        project=project,
        annotator_id=annotator_id,
        kind=QualityAction.Kind.PAUSE if participant is None else QualityAction.Kind.SCREEN_OUT,
        reason=reason[:300],
        figures=figures,
        by=by,
    )
    action.save()
    if participant is None:
        engine.assignments_release(
            annotator_id=annotator_id, project=project, reason="paused", stage_ids=[stage.pk]
        )
        if withdraw:
            _withdraw(action)
    elif withdraw:
        action.withdrawn = participant.withdrawn
        action.withdrawn_at = participant.withdrawn_at
        action.save(update_fields=["withdrawn", "withdrawn_at"])
    return action


def _withdraw(action: QualityAction) -> int:
    withdrawn, _kept = engine.annotations_withdraw(
        annotator_id=action.annotator_id,
        project=action.project,
        reason=f"quality: {action.reason}",
        stage_ids=[action.stage_id],
    )
    action.withdrawn += withdrawn
    action.withdrawn_at = timezone.now()
    action.save(update_fields=["withdrawn", "withdrawn_at"])
    return withdrawn


@transaction.atomic
def quality_action_take(*, stage: Stage, annotator_id: int, by: Any, reason: str) -> QualityAction:
    """A researcher pauses an annotator of the stage's project on the stage (a study
    participant: screens them out) with ``reason``. Refused for someone who is not an
    annotator of the project, and while an action is in force."""
    reason = engine.clean_text(reason, field="reason", max_length=300) or "Paused by a researcher."
    if not Membership.objects.filter(
        project_id=stage.project_id, user_id=annotator_id, role=Role.ANNOTATOR
    ).exists():
        raise NotFound("This person is not an annotator of the project.")
    if selectors.active_action(stage.pk, annotator_id) is not None:
        raise Conflict("This person is already paused on this stage.")
    total, right = selectors.gold_counts(stage, annotator_id)
    return _act(
        stage=stage,
        annotator_id=annotator_id,
        reason=reason,
        figures={"gold": total, "right": right},
        by=by,
        withdraw=False,
    )


def _locked_action(stage: Stage, action_id: int) -> QualityAction:
    action = (
        QualityAction.objects.select_for_update()
        .select_related("project")
        .filter(pk=action_id, stage=stage)
        .first()
    )
    if action is None:
        raise NotFound("There is no such action on this stage.")
    return action


@transaction.atomic
def quality_action_undo(*, stage: Stage, action_id: int, by: Any) -> QualityAction:
    """Take a pause or screen-out back: the person gets the stage's items again (a participant:
    their session is active again). Work already withdrawn stays withdrawn. Undoing twice
    changes nothing."""
    action = _locked_action(stage, action_id)
    if action.undone_at is not None:
        return action
    if action.kind == QualityAction.Kind.SCREEN_OUT:
        crowd.participant_screen_out_undo(
            annotator_id=action.annotator_id, project=action.project, reason=action.reason
        )
    action.undone_at = timezone.now()
    action.undone_by = by
    action.save(update_fields=["undone_at", "undone_by"])
    return action


@transaction.atomic
def quality_action_withdraw(*, stage: Stage, action_id: int, by: Any) -> int:
    """Withdraw the earlier work in the stage of the person an action in force names, through
    the engine's withdrawal rule (answers on item stages still open are deleted and their slots
    reopened; answers a decision was made with are kept). Returns the number withdrawn. An
    action already undone is refused (resume first decides that their work counts)."""
    action = _locked_action(stage, action_id)
    if action.undone_at is not None:
        raise Conflict("This action was undone: their work stays.")
    if action.kind == QualityAction.Kind.SCREEN_OUT:
        before = action.withdrawn
        participant = crowd.participant_screen_out(
            annotator_id=action.annotator_id,
            project=action.project,
            reason=action.reason,
            withdraw=True,
        )
        total = participant.withdrawn if participant is not None else before
        action.withdrawn = total
        action.withdrawn_at = timezone.now()
        action.save(update_fields=["withdrawn", "withdrawn_at"])
        return total - before
    return _withdraw(action)
