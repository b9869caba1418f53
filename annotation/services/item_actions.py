"""An admin's actions on items (the item page, the data manager's bulk actions): reopen a
decided stage, resolve by hand, release leases, send back to an earlier stage, discard. Each
acts on one item at a time in its own transaction, under the same row locks as the other
services, and writes an ``ItemEvent`` (who, when, action, reason, stage, before and after).

Locks, in the order a submit takes them (annotation/services/submit.py locks the assignment,
then its item stage): the item stage's active leases first, then the item's item stages (by
id). A lease that a concurrent submit still holds when the item stage is ours is not skipped
silently: the action refuses that item ("someone is submitting") and writes nothing, and the
submit goes on as if no one had acted.

Slot counters stay right: a released lease gives its slot back (``leased_count`` − 1), a
reopened or sent-back stage starts a new round with counters from zero (the route's ``back``
rule, annotation/services/outcomes.py), a closed item stage keeps the counts it had. The
invariant ``submitted + leased ≤ target`` and the counts the repair sweep checks
(annotation.services.item_stage_counters_repair) hold after every action.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation import events
from annotation.errors import ApplicationError, Conflict
from annotation.inputs import clean_text
from annotation.models import Assignment, Item, ItemEvent, ItemStage, Project, Stage
from annotation.services.items import items_discard
from annotation.services.leases import _release_assignments
from annotation.services.outcomes import _close_item_stage, _item_stage_reopen, decide_by_hand

#: The actions ``items_act`` knows, with the words a page shows for each.
ACTIONS: dict[str, str] = {
    ItemEvent.Action.REOPEN: "Reopen the decided stage",
    ItemEvent.Action.RESOLVE: "Resolve by hand",
    ItemEvent.Action.RELEASE_LEASE: "Release open leases",
    ItemEvent.Action.SEND_BACK: "Send back to an earlier stage",
    ItemEvent.Action.DISCARD: "Discard",
}
#: Actions that need a reason (the others take one if given). Reopening undoes a decision, so
#: its history line must say why, as a hand decision's does.
REASON_REQUIRED: set[str] = {
    ItemEvent.Action.REOPEN,
    ItemEvent.Action.RESOLVE,
    ItemEvent.Action.DISCARD,
}
LIVE = (ItemStage.State.OPEN, ItemStage.State.RESOLVING, ItemStage.State.ADJUDICATION)
CLOSED = (ItemStage.State.RESOLVED, ItemStage.State.DISCARDED)
#: Most items one call acts on (a page of the data manager's selection is far below it).
MAX_ITEMS = 5000


@dataclass
class ItemActionReport:
    """What ``items_act`` did: the ids of items acted on (in the order given) and, per item
    refused, why in words. Items refused are left exactly as they were."""

    action: str
    done: list[int] = field(default_factory=list)
    refused: dict[int, str] = field(default_factory=dict)


def items_act(
    project: Project,
    item_ids: Iterable[int],
    action: str,
    *,
    by: User,
    reason: str = "",
    stage: Stage | str | None = None,
    value: Any = None,
) -> ItemActionReport:
    """Carry out ``action`` on each item of ``project`` in ``item_ids`` (one transaction per
    item) and record it in the item's history (``ItemEvent``). The caller checked that ``by``
    is an admin of the project (studio.access). Actions:

    - ``reopen``: with a required reason; a decided or discarded item stage (of ``stage``, or
      the item's last closed one) collects again: a new round with counters from zero, the item back in the pipeline
      (as a route's ``back`` does). Refused while the item is still in another stage.
    - ``resolve``: decide the item's current stage (or ``stage``) by hand with ``value`` and a
      required reason: checked like a reviewer's adjudication (one of the kind's choices, or a
      value the kind accepts) and routed as a decision is; open leases are released first.
    - ``release_lease``: end the open leases of the item's current stage (or ``stage``); their
      slots go to others (the holders do not get the item again in this round).
    - ``send_back``: to ``stage`` (required), a stage before the item's current one: the
      current item stage is closed undecided (discarded, leases released) and the item
      collects again in ``stage`` (a new round there).
    - ``discard``: with a required reason; open leases are released, the item's open item
      stages closed and the item discarded (annotation.services.items_discard).

    Bad input (an unknown action, a missing reason, a stage not of the project) raises
    ApplicationError before anything is written; an item that cannot take the action (not of
    the project, in the wrong state, a value its stage refuses) is refused in
    ``ItemActionReport.refused`` with the reason in words, and nothing of it changes."""
    if action not in ACTIONS:
        raise ApplicationError(
            f"Unknown action {str(action)[:40]!r}: one of {', '.join(ACTIONS)}.",
            {"action": list(ACTIONS)},
        )
    reason = clean_text(reason or "", field="reason", max_length=500)
    if action in REASON_REQUIRED and not reason:
        raise ApplicationError(
            f"Give a reason to {ACTIONS[action].lower()}.", {"reason": "required"}
        )
    target = _stage_of(project, stage)
    if action == ItemEvent.Action.SEND_BACK and target is None:
        raise ApplicationError("Name the stage to send the items back to.", {"stage": "required"})
    ids = list(dict.fromkeys(int(pk) for pk in item_ids))
    if not ids:
        raise ApplicationError("Choose at least one item.", {"item_ids": "required"})
    if len(ids) > MAX_ITEMS:
        raise ApplicationError(
            f"Act on at most {MAX_ITEMS} items at once (got {len(ids)}).", {"item_ids": len(ids)}
        )
    report = ItemActionReport(action=action)
    act = _ACTIONS[action]
    for item_id in ids:
        try:
            with transaction.atomic():
                act(project, item_id, by=by, reason=reason, stage=target, value=value)
        except ApplicationError as error:
            report.refused[item_id] = error.message
        else:
            report.done.append(item_id)
    return report


def _stage_of(project: Project, stage: Stage | str | None) -> Stage | None:
    if stage is None or stage == "":
        return None
    slug = stage.slug if isinstance(stage, Stage) else str(stage)
    found = Stage.objects.filter(project=project, slug=slug).first()
    if found is None or (isinstance(stage, Stage) and stage.pk != found.pk):
        raise ApplicationError(f"This project has no stage {slug[:64]!r}.", {"stage": slug[:64]})
    return found


def _locked(project: Project, item_id: int) -> tuple[Item, list[ItemStage]]:
    """The item and its item stages (with stages), locked: first the active leases of the
    item's item stages (as a submit locks its lease before its item stage), then the item
    stages by id, then the item row (an admin's second action on it waits here)."""
    item = Item.objects.filter(project=project, pk=item_id).first()
    if item is None:
        raise ApplicationError("There is no such item in this project.")
    leases = Assignment.objects.filter(
        item_stage__item_id=item_id, status=Assignment.Status.ACTIVE
    ).order_by("pk")
    list(leases.select_for_update().values_list("pk", flat=True))
    item_stages = list(
        ItemStage.objects.select_for_update(of=("self",))
        .filter(item_id=item_id)
        .select_related("stage")
        .order_by("pk")
    )
    item = Item.objects.select_for_update().get(pk=item_id)
    for item_stage in item_stages:
        item_stage.item = item
    return item, sorted(item_stages, key=lambda row: row.stage.position)


def _live(item_stages: list[ItemStage], stage: Stage | None) -> ItemStage:
    """The item stage an action on the item's current work acts on: ``stage``'s, or the
    item's first stage still collecting or waiting for a decision."""
    if stage is not None:
        chosen = next((row for row in item_stages if row.stage_id == stage.pk), None)
        if chosen is None:
            raise ApplicationError(f"The item was never in {stage.name}.")
        if chosen.state not in LIVE:
            raise ApplicationError(
                f"The item's work in {stage.name} is {chosen.get_state_display().lower()}, "
                "not open."
            )
        return chosen
    live = [row for row in item_stages if row.state in LIVE]
    if not live:
        raise ApplicationError("The item has no open stage (it is decided or discarded).")
    return live[0]


def _release(item_stage: ItemStage, reason: str) -> int:
    """End the item stage's active leases (locked by _locked) as revoked, slots given back;
    refuses when a concurrent submit holds one (it will finish after us)."""
    ids = list(
        Assignment.objects.filter(
            item_stage=item_stage, status=Assignment.Status.ACTIVE
        ).values_list("pk", flat=True)
    )
    released = _release_assignments(
        ids, status=Assignment.Status.REVOKED, reason=(reason or "released by an admin")[:300]
    )
    if released < len(ids):
        raise Conflict("Someone is submitting an answer to this item right now; try again.")
    item_stage.refresh_from_db(fields=["leased_count"])
    return released


def _record(
    item: Item,
    action: str,
    *,
    by: User,
    reason: str,
    stage: Stage | None,
    status_before: str,
    state_before: str = "",
    state_after: str = "",
    **detail: Any,
) -> ItemEvent:
    item.refresh_from_db(fields=["status"])
    return ItemEvent.objects.create(
        item=item,
        stage=stage,
        action=action,
        reason=reason,
        by=by,
        status_before=status_before,
        status_after=item.status,
        state_before=state_before,
        state_after=state_after,
        detail=detail,
    )


def _reopen(project: Project, item_id: int, *, by, reason, stage, value) -> None:
    item, item_stages = _locked(project, item_id)
    live = [row for row in item_stages if row.state in LIVE]
    if live:
        raise ApplicationError(
            f"The item is still open in {live[0].stage.name}: resolve it there, or send it "
            "back to an earlier stage."
        )
    closed = [row for row in item_stages if row.state in CLOSED]
    if stage is not None:
        closed = [row for row in closed if row.stage_id == stage.pk]
        if not closed:
            raise ApplicationError(f"The item has no decided work in {stage.name} to reopen.")
    if not closed:
        raise ApplicationError("The item has no decided stage to reopen.")
    chosen = max(closed, key=lambda row: (row.resolved_at or row.opened_at, row.stage.position))
    if not chosen.stage.is_active:
        raise ApplicationError(f"{chosen.stage.name} is paused: resume the stage first.")
    status_before, state_before = item.status, chosen.state
    _item_stage_reopen(item, chosen.stage, chosen)
    Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
    _record(
        item,
        ItemEvent.Action.REOPEN,
        by=by,
        reason=reason,
        stage=chosen.stage,
        status_before=status_before,
        state_before=state_before,
        state_after=ItemStage.State.OPEN,
        round=chosen.round,
    )


def _resolve(project: Project, item_id: int, *, by, reason, stage, value) -> None:
    item, item_stages = _locked(project, item_id)
    chosen = _live(item_stages, stage)
    if value is None or value == "":
        raise ApplicationError("Choose the value to decide.", {"value": "required"})
    status_before, state_before = item.status, chosen.state
    released = _release(chosen, reason)
    resolution = decide_by_hand(chosen, by=by, value=value, reason=reason)
    chosen.refresh_from_db(fields=["state"])
    transaction.on_commit(lambda: events.item_stages_resolved([chosen.pk]))
    _record(
        item,
        ItemEvent.Action.RESOLVE,
        by=by,
        reason=reason,
        stage=chosen.stage,
        status_before=status_before,
        state_before=state_before,
        state_after=chosen.state,
        value=resolution.value,
        outcome=resolution.outcome,
        leases_released=released,
    )


def _release_lease(project: Project, item_id: int, *, by, reason, stage, value) -> None:
    item, item_stages = _locked(project, item_id)
    chosen = _live(item_stages, stage)
    if (
        chosen.leased_count == 0
        and not chosen.assignments.filter(status=Assignment.Status.ACTIVE).exists()
    ):
        raise ApplicationError(f"Nobody holds a lease on this item in {chosen.stage.name}.")
    holders = list(
        chosen.assignments.filter(status=Assignment.Status.ACTIVE)
        .order_by("pk")
        .values_list("annotator__username", flat=True)
    )
    released = _release(chosen, reason)
    _record(
        item,
        ItemEvent.Action.RELEASE_LEASE,
        by=by,
        reason=reason,
        stage=chosen.stage,
        status_before=item.status,
        state_before=chosen.state,
        state_after=chosen.state,
        leases_released=released,
        holders=holders,
    )


def _send_back(project: Project, item_id: int, *, by, reason, stage, value) -> None:
    item, item_stages = _locked(project, item_id)
    if not item_stages:
        raise ApplicationError("The item is in no stage yet.")
    live = [row for row in item_stages if row.state in LIVE]
    current = live[0] if live else item_stages[-1]
    if stage.position >= current.stage.position:
        raise ApplicationError(
            f"{stage.name} is not before the item's current stage ({current.stage.name})."
        )
    if not stage.is_active:
        raise ApplicationError(f"{stage.name} is paused: resume the stage first.")
    status_before = item.status
    for row in live:
        _release(row, reason or f"sent back to {stage.name}")
        _close_item_stage(row, ItemStage.State.DISCARDED, timezone.now())
    existing = next((row for row in item_stages if row.stage_id == stage.pk), None)
    state_before = existing.state if existing is not None else ""
    _item_stage_reopen(item, stage, existing)
    Item.objects.filter(pk=item.pk).update(status=Item.Status.ACTIVE)
    _record(
        item,
        ItemEvent.Action.SEND_BACK,
        by=by,
        reason=reason,
        stage=stage,
        status_before=status_before,
        state_before=state_before,
        state_after=ItemStage.State.OPEN,
        **{"from": current.stage.slug},
    )


def _discard(project: Project, item_id: int, *, by, reason, stage, value) -> None:
    item, item_stages = _locked(project, item_id)
    if item.status == Item.Status.DISCARDED and not any(row.state in LIVE for row in item_stages):
        raise ApplicationError("The item is already discarded.")
    status_before = item.status
    live = [row for row in item_stages if row.state in LIVE]
    for row in live:
        _release(row, reason)
        _close_item_stage(row, ItemStage.State.DISCARDED, timezone.now())
    items_discard(project=project, item_ids=[item.pk])
    _record(
        item,
        ItemEvent.Action.DISCARD,
        by=by,
        reason=reason,
        stage=live[0].stage if live else None,
        status_before=status_before,
        state_before=live[0].state if live else "",
        state_after=ItemStage.State.DISCARDED if live else "",
        closed=[row.stage.slug for row in live],
    )


_ACTIONS: dict[str, Any] = {
    ItemEvent.Action.REOPEN: _reopen,
    ItemEvent.Action.RESOLVE: _resolve,
    ItemEvent.Action.RELEASE_LEASE: _release_lease,
    ItemEvent.Action.SEND_BACK: _send_back,
    ItemEvent.Action.DISCARD: _discard,
}
