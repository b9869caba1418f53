"""Spot checks: reviewers look again at a sample of items their annotators already settled.

**The rate** is a stage setting: ``Stage.config["spot_check_rate"]``, a share from 0 to 1
(``0.1``: one accepted item in ten), set on the Setup tab with the stage's other options (its
*config* JSON); absent, zero or not a number: no spot checks in that stage.

**The sample** is deterministic and seeded: an item stage is drawn when
``(id × multiplier) mod PRIME`` falls below ``rate × PRIME``, the multiplier derived from the
project (a multiplicative hash: ids in order come out spread over the range, so the share drawn
is the rate, and the same ids are drawn on every page load and by every reviewer). Drawn are
the stage's item stages that the annotators settled — resolved, outcome ``accept``, not decided
by a reviewer already — and that nobody has spot-checked yet. The queue (``spot_check_queue``)
sits on the Adjudication tab beside ties and escalations; a reviewer never checks an item they
annotated.

**The verdict** (``spot_check_record``): *confirmed* is recorded as it is; *overturned* goes
through the engine's adjudication path: the item stage is put back to waiting for a reviewer
and ``annotation.services.item_stage_adjudicate`` decides it with the reviewer's value and
reason, routing it as any reviewer's decision. An item that has already gone on to a later
stage is not reopened here (its later work would stand on the old decision): the refusal says
so and the item's page is where to reopen it. Either way a ``SpotCheck`` row keeps who checked,
what was checked and the verdict.
"""

from __future__ import annotations

import hashlib
from functools import reduce
from operator import or_
from typing import Any

from django.db import transaction
from django.db.models import BigIntegerField, F, Q, QuerySet, Value
from django.db.models.functions import Cast

from agreement.models import SpotCheck
from annotation import services
from annotation.errors import ApplicationError, Conflict
from annotation.inputs import clean_text
from annotation.models import Item, ItemStage, Project, Resolution, Stage

RATE_KEY = "spot_check_rate"
#: A prime above 2**31: (id × multiplier) mod PRIME spreads ids over [0, PRIME).
PRIME = 2_147_483_659


def spot_check_rate(stage: Stage) -> float:
    """The stage's spot-check share, from 0 to 1 (0 when unset or not a number)."""
    raw = (stage.config or {}).get(RATE_KEY)
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return 0.0
    return min(max(float(raw), 0.0), 1.0)


def _multiplier(project: Project) -> int:
    digest = hashlib.sha256(f"rungwise-spot-check:{project.pk}".encode()).hexdigest()
    return int(digest, 16) % (PRIME - 1) + 1


def spot_check_queue(project: Project, *, reviewer: Any = None) -> QuerySet[ItemStage]:
    """The settled item stages of ``project`` drawn for a spot check and not checked yet, the
    longest settled first; with ``reviewer``, without those the reviewer annotated."""
    stages = [(stage, spot_check_rate(stage)) for stage in project.stages.order_by("position")]
    drawn = [
        Q(stage_id=stage.pk, spot_bucket__lt=int(rate * PRIME)) for stage, rate in stages if rate
    ]
    if not drawn:
        return ItemStage.objects.none()
    bucket = (
        Cast(F("pk"), BigIntegerField())
        * Value(_multiplier(project), output_field=BigIntegerField())
        % Value(PRIME, output_field=BigIntegerField())
    )
    queue = (
        ItemStage.objects.filter(
            stage__project=project,
            state=ItemStage.State.RESOLVED,
            resolution__outcome="accept",
            spot_check__isnull=True,
        )
        .exclude(resolution__status=Resolution.Status.ADJUDICATED)
        .annotate(spot_bucket=bucket)
        .filter(reduce(or_, drawn))
    )
    if reviewer is not None:
        queue = queue.exclude(annotations__annotator=reviewer)
    return queue.select_related("item", "stage", "resolution").order_by("resolved_at", "pk")


def spot_checks_recent(project: Project, limit: int = 10) -> QuerySet[SpotCheck]:
    """The project's latest spot checks, with who checked."""
    return (
        SpotCheck.objects.filter(item_stage__stage__project=project)
        .select_related("item_stage__item", "item_stage__stage", "reviewer")
        .order_by("-created_at", "-pk")[:limit]
    )


@transaction.atomic
def spot_check_record(
    *, item_stage_id: int, reviewer: Any, overturn: bool, value: Any = None, reason: str = ""
) -> SpotCheck:
    """Record a reviewer's spot check of a settled item stage: confirmed, or overturned with
    ``value`` and a ``reason`` through the engine's adjudication (see the module's docstring).
    Locks the item stage row first (the lock resolution and adjudication take), so two
    reviewers checking one item at once record one verdict: the second gets a 409 naming the
    first. Refuses (409) an item stage no longer settled, and an overturn of an item that has
    gone on to a later stage."""
    reason = clean_text(reason, field="reason", max_length=2000)
    item_stage = (
        ItemStage.objects.select_for_update(of=("self",))
        .select_related("item", "stage")
        .filter(pk=item_stage_id)
        .first()
    )
    if item_stage is None:
        raise Conflict("There is no such item to check.")
    done = SpotCheck.objects.filter(item_stage=item_stage).select_related("reviewer").first()
    if done is not None:
        who = done.reviewer.get_username() if done.reviewer else "another reviewer"
        raise Conflict(f"{who} already checked this item: {done.get_verdict_display().lower()}.")
    resolution = Resolution.objects.filter(item_stage=item_stage).first()
    if (
        item_stage.state != ItemStage.State.RESOLVED
        or resolution is None
        or resolution.outcome != "accept"
    ):
        raise Conflict("This item is no longer settled as accepted; nothing to spot-check.")
    checked = resolution.value
    if not overturn:
        return SpotCheck.objects.create(
            item_stage=item_stage,
            reviewer=reviewer,
            verdict=SpotCheck.Verdict.CONFIRMED,
            checked_value=checked,
            reason=reason,
        )
    if not reason:
        raise ApplicationError("Say why you overturn the decision.", {"reason": "required"})
    if value == checked:
        raise ApplicationError(
            f"{value} is the decision already made: confirm it instead, or choose another value.",
            {"value": "a different value"},
        )
    later = (
        ItemStage.objects.filter(item_id=item_stage.item_id, opened_at__gt=item_stage.opened_at)
        .exclude(pk=item_stage.pk)
        .select_related("stage")
    )
    if later.exists():
        names = ", ".join(sorted({other.stage.name for other in later}))
        raise Conflict(
            f"{item_stage.item.external_id} has gone on to {names}, whose work stands on this "
            "decision: reopen it from the item's page to change it.",
            {"later_stages": names},
        )
    # Back to waiting for a reviewer, so that the engine's adjudication decides and routes it
    # like any reviewer's decision (annotation/services/outcomes.py, item_stage_adjudicate).
    ItemStage.objects.filter(pk=item_stage.pk).update(state=ItemStage.State.ADJUDICATION)
    Item.objects.filter(pk=item_stage.item_id).exclude(status=Item.Status.DISCARDED).update(
        status=Item.Status.ACTIVE
    )
    services.item_stage_adjudicate(
        item_stage_id=item_stage.pk,
        reviewer=reviewer,
        value=value,
        reason=f"Spot check overturned {checked}: {reason}",
    )
    return SpotCheck.objects.create(
        item_stage=item_stage,
        reviewer=reviewer,
        verdict=SpotCheck.Verdict.OVERTURNED,
        checked_value=checked,
        value=value,
        reason=reason,
    )
