"""Resolution: deciding a completed item stage by its policy, opening the next phase, following
the outcome's route, and a reviewer's adjudication."""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import BooleanField, ExpressionWrapper
from django.utils import timezone

from annotation import adaptive, events
from annotation.advisory import advisory_expression
from annotation.errors import ApplicationError, Conflict, NotFound
from annotation.inputs import clean_text
from annotation.kinds import KindContext, get_kind
from annotation.models import (
    SUBMISSION_ORDER,
    Annotation,
    Item,
    ItemStage,
    Resolution,
    Stage,
)
from annotation.phases import first_slots, is_last, stage_phases
from annotation.policies import Ballot, PolicySettings, get_policy
from annotation.resolution import Decision
from annotation.routing import route_for
from annotation.services.setup import item_revise, item_stages_open

logger = logging.getLogger(__name__)


# --- Resolution -------------------------------------------------------------------------------


def _confident_enough(item_stage: ItemStage, stage: Stage, decision: Decision) -> Decision:
    """Adaptive overlap (annotation/adaptive.py): a decided label below the stage's
    ``confidence`` target becomes a request for one more annotator (status ``insufficient``,
    ``needs_more``) while the item stage is below the stage's cap; at the cap the decision
    stands, its reason saying so. Other decisions come back as they are."""
    options = stage.policy_options or {}
    if options.get("confidence") is None or decision.outcome == "pending" or not decision.votes:
        return decision
    kind = get_kind(stage.kind)
    choices = kind.choices(KindContext(stage=stage, item_stage=item_stage)) or ()
    question = adaptive.ConfidenceQuestion(
        item_stage_id=item_stage.pk,
        value=decision.value,
        votes=decision.votes,
        categories=max(len(choices), len(decision.votes)),
    )
    short = adaptive.shortfall(question, options)
    if short is None:
        return decision
    cap = stage.effective_max_overlap
    if item_stage.target_count >= cap:
        reason = short.reason(at_cap=cap)
        return replace(
            decision, reason=f"{decision.reason}; {reason}" if decision.reason else reason
        )
    return Decision(None, "insufficient", "pending", True, decision.votes, reason=short.reason())


def _ballots(item_stage: ItemStage, stage: Stage, kind: Any) -> tuple[list[Ballot], int]:
    """The annotations of the item stage's current round, as the policy sees them: votes,
    payloads and phases, annotators numbered 1, 2, … in the order they submitted; and how many
    advisory answers (annotation.advisory) were left out."""
    rows = (
        Annotation.objects.filter(item_stage=item_stage, round=item_stage.round)
        .annotate(advisory=ExpressionWrapper(advisory_expression(), output_field=BooleanField()))
        .order_by(*SUBMISSION_ORDER)
        .values_list("payload", "phase", "annotator_id", "external_rater", "advisory")
    )
    numbers: dict[Any, int] = {}
    ballots = []
    left_out = 0
    for payload, phase, annotator_id, external, advisory in rows:
        if advisory:
            left_out += 1
            continue
        who = annotator_id if annotator_id is not None else f"external:{external}"
        number = numbers.setdefault(who, len(numbers) + 1)
        ballots.append(Ballot(kind.vote(payload), payload, phase, number, rater=who))
    return ballots, left_out


def _policy_settings(
    item_stage: ItemStage, stage: Stage, kind: Any, advisory: int = 0
) -> PolicySettings:
    phases = stage_phases(stage)
    # A stopped item stage (annotation/services/stages.py, item_stage_stop) is decided from the
    # answers it closed at: policies that want every slot filled count those.
    slots = item_stage.target_count if item_stage.stopped_at else phases[-1].slots
    return PolicySettings(
        tie_policy=stage.tie_policy,
        tie_default=stage.tie_default,
        required=max(slots - advisory, 1),
        reject_values=kind.reject_values,
        options=stage.policy_options or {},
        last_phase=len(phases) - 1,
        item_payload=item_stage.item.payload,
        stage_id=stage.pk,
    )


def _decision_for(item_stage: ItemStage, stage: Stage) -> Decision:
    kind = get_kind(stage.kind)
    ballots, advisory = _ballots(item_stage, stage, kind)
    settings = _policy_settings(item_stage, stage, kind, advisory)
    return get_policy(stage.resolution_policy).decide(ballots, settings)


def _phase_advance(item_stage: ItemStage, stage: Stage) -> None:
    """Open the item stage's next phase: its slots, counters from zero, open for leasing."""
    item_stage.phase += 1
    item_stage.target_count = stage_phases(stage)[item_stage.phase].slots
    item_stage.submitted_count = 0
    item_stage.state = ItemStage.State.OPEN
    item_stage.completed_at = None
    item_stage.stopped_at = None  # a stop closes one phase's target, not the next one's
    item_stage.save(
        update_fields=[
            "phase",
            "target_count",
            "submitted_count",
            "state",
            "completed_at",
            "stopped_at",
        ]
    )


def _follow_route(
    item_stage: ItemStage, stage: Stage, outcome: str, decision: Decision | None = None
) -> None:
    """Carry out the stage's route for `outcome` (annotation.routing): close this item stage
    and move the item on. The caller holds the item stage's row lock."""
    route = route_for(stage, outcome)
    item = item_stage.item
    now = timezone.now()
    if route["action"] == "revise":
        revision = decision.revision if decision is not None else None
        if decision is not None and revision is not None and dict(revision) != item.payload:
            item_revise(
                item=item,
                payload=revision,
                author=None,
                reason=f"{stage.name}: {decision.reason or outcome}"[:500],
                stage=stage,
            )
        route = route["then"]
    if route["action"] == "back":
        target = Stage.objects.get(project_id=stage.project_id, slug=route["stage"])
        existing = ItemStage.objects.filter(item=item, stage=target).first()
        rounds_done = existing.round if existing is not None else 0
        if rounds_done < route["max_loops"]:
            if target.pk != stage.pk:
                _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
            _item_stage_reopen(item, target, existing)
            if existing is None:
                # The item never was in the target stage (e.g. an author-revision stage items
                # enter only when sent back): this first visit is loop 1, so that max_loops
                # counts loops whether or not the item passed through the target before.
                ItemStage.objects.filter(item=item, stage=target).update(round=1)
            Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
            return
        route = route["otherwise"]
    action = route["action"]
    if action == "escalate":
        item_stage.state = ItemStage.State.ADJUDICATION
        item_stage.save(update_fields=["state"])
        Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
        _announce_adjudication(item_stage)
        return
    next_stage = None
    if action == "next":
        next_stage = (
            Stage.objects.filter(
                project_id=stage.project_id, position__gt=stage.position, is_active=True
            )
            .order_by("position")
            .first()
        )
    elif action == "stage":
        next_stage = Stage.objects.get(project_id=stage.project_id, slug=route["stage"])
    if action in ("next", "stage", "finish"):
        _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
        if next_stage is not None:
            existing = ItemStage.objects.filter(item=item, stage=next_stage).first()
            _item_stage_reopen(item, next_stage, existing)
            item_status = Item.Status.ACTIVE
        else:
            item_status = Item.Status.ACCEPTED
    elif action == "keep":
        _close_item_stage(item_stage, ItemStage.State.RESOLVED, now)
        item_status = Item.Status.REJECTED
    else:  # discard
        _close_item_stage(item_stage, ItemStage.State.DISCARDED, now)
        item_status = Item.Status.DISCARDED
        if route.get("reason"):
            Resolution.objects.filter(item_stage=item_stage, reason="").update(
                reason=route["reason"]
            )
    Item.objects.filter(pk=item.pk).update(status=item_status)


def _announce_adjudication(item_stage: ItemStage) -> None:
    """The project event ``item.needs_adjudication`` for an item stage just sent to a reviewer
    (annotation/events.py, "Project events"), in the decision's transaction."""
    events.project_event(
        "item.needs_adjudication",
        project_id=item_stage.stage.project_id,
        data={
            "item": {"id": item_stage.item_id, "external_id": item_stage.item.external_id},
            "stage": {"id": item_stage.stage_id, "slug": item_stage.stage.slug},
            "item_stage_id": item_stage.pk,
            "round": item_stage.round,
        },
    )


def _close_item_stage(item_stage: ItemStage, state: str, now: Any) -> None:
    item_stage.state = state
    item_stage.resolved_at = now
    item_stage.save(update_fields=["state", "resolved_at"])


def _item_stage_reopen(item: Item, stage: Stage, existing: ItemStage | None) -> None:
    """Open the item in `stage`: a new item stage, or another round of the one it had (counters
    from zero, first phase; annotations of earlier rounds stay, and policies read the round's)."""
    if existing is None:
        item_stages_open(items=[item], stage=stage)
        return
    existing.round += 1
    existing.phase = 0
    existing.target_count = first_slots(stage)
    existing.submitted_count = 0
    existing.state = ItemStage.State.OPEN
    existing.completed_at = None
    existing.resolved_at = None
    existing.stopped_at = None  # a new round collects its full target again
    existing.save(
        update_fields=[
            "round",
            "phase",
            "target_count",
            "submitted_count",
            "state",
            "completed_at",
            "resolved_at",
            "stopped_at",
        ]
    )


@transaction.atomic
def item_stage_resolve(*, item_stage_id: int) -> Resolution | None:
    """Decide a completed item stage by its stage's policy and follow the outcome's route, or
    open its next phase. Idempotent and safe to run concurrently: the item stage row is locked
    and only a RESOLVING row is acted on."""
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage", "item")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None or item_stage.state != ItemStage.State.RESOLVING:
        return Resolution.objects.filter(item_stage_id=item_stage_id).first()
    stage = item_stage.stage
    if not is_last(stage, item_stage):
        _phase_advance(item_stage, stage)
        return None
    decision = _decision_for(item_stage, stage)
    decision = _confident_enough(item_stage, stage, decision)
    resolution, _ = Resolution.objects.update_or_create(
        item_stage=item_stage,
        defaults={
            "value": decision.value,
            "status": decision.status,
            "outcome": decision.outcome,
            "votes": decision.votes,
            "n_annotations": sum(decision.votes.values())
            if decision.votes
            else item_stage.submitted_count,
            "policy": stage.resolution_policy,
            "decided_by": None,
            "reason": decision.reason,
        },
    )
    if decision.needs_more and item_stage.target_count < stage.effective_max_overlap:
        item_stage.target_count += 1
        item_stage.state = ItemStage.State.OPEN
        item_stage.completed_at = None
        item_stage.save(update_fields=["target_count", "state", "completed_at"])
    elif decision.outcome == "pending":
        item_stage.state = ItemStage.State.ADJUDICATION
        item_stage.save(update_fields=["state"])
        _announce_adjudication(item_stage)
    else:
        _follow_route(item_stage, stage, decision.outcome, decision)
        events.item_stage_decided(item_stage, resolution)
    return resolution


@transaction.atomic
def item_stage_adjudicate(
    *, item_stage_id: int, reviewer: User, value: Any, reason: str
) -> Resolution:
    """A reviewer's decision on an item stage waiting for adjudication: one of the item
    stage's choices (the kind's), routed like the policy's own outcomes."""
    reason = clean_text(reason, field="reason", max_length=2000)
    if not reason:
        raise ApplicationError("Give a reason for the decision.", {"reason": "required"})
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("stage", "item")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None:
        raise NotFound(f"There is no item stage {item_stage_id}.")
    if item_stage.state != ItemStage.State.ADJUDICATION:
        raise Conflict("This item is not waiting for adjudication (someone may have decided it).")
    return decide_by_hand(item_stage, by=reviewer, value=value, reason=reason)


def decide_by_hand(item_stage: ItemStage, *, by: User, value: Any, reason: str) -> Resolution:
    """A person's decision on a locked item stage (a reviewer's adjudication, an admin's
    resolution by hand, annotation/services/item_actions.py): `value` must be one of the item
    stage's choices (the kind's) or, for an open answer, pass the kind's validation; the
    decision is routed like the policy's own outcomes and announced to the decided-listeners.
    The caller holds the item stage's row lock, checked its state and cleaned `reason`."""
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    context = KindContext(stage=stage, item_stage=item_stage)
    categories = kind.choices(context)
    if categories is not None and value not in categories:
        raise ApplicationError(
            f"Decide one of: {', '.join(map(str, categories))} (got {value!r}).",
            {"value": [str(category) for category in categories]},
        )
    if categories is None:
        # An open (numeric) answer: the value a reviewer decides must be one an annotator could
        # have given — the kind's own validation, so NaN, infinities and values off the scale
        # are refused with the kind's message.
        if isinstance(value, float) and not math.isfinite(value):
            raise ApplicationError("The decision must be a finite number.", {"value": value})
        vote_field = kind.vote_field or "value"
        value = kind.validate({vote_field: value}, context).get(vote_field)
    ballots, advisory = _ballots(item_stage, stage, kind)
    decision = get_policy(stage.resolution_policy).adjudicated(
        value, ballots, _policy_settings(item_stage, stage, kind, advisory)
    )
    if decision is not None:
        outcome = decision.outcome
    else:
        outcome = "reject" if value in kind.reject_values else "accept"
    resolution, _ = Resolution.objects.update_or_create(
        item_stage=item_stage,
        defaults={
            "value": value,
            "status": Resolution.Status.ADJUDICATED,
            "outcome": outcome,
            "policy": stage.resolution_policy,
            "decided_by": by,
            "reason": reason,
        },
    )
    route = route_for(stage, outcome)
    if route["action"] == "escalate":
        # The reviewer has decided; escalating again would loop. Rejected means discarded.
        _close_item_stage(item_stage, ItemStage.State.DISCARDED, timezone.now())
        Item.objects.filter(pk=item_stage.item_id).update(status=Item.Status.DISCARDED)
    else:
        _follow_route(item_stage, stage, outcome, decision)
    events.item_stage_decided(item_stage, resolution)
    return resolution


def item_stages_unresolved(*, older_than_seconds: float = 30, limit: int = 1000) -> list[int]:
    """Ids of item stages complete for a while but still unresolved (a lost message)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    return list(
        ItemStage.objects.filter(state=ItemStage.State.RESOLVING, completed_at__lte=cutoff)
        .order_by("completed_at")
        .values_list("pk", flat=True)[:limit]
    )
