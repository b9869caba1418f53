"""Recording events for webhooks: the outbox, written in the transaction of the work.

The app's listeners (registered in webhooks/apps.py) turn what the engine and the apps announce
(annotation/events.py) into ``WebhookEvent`` rows, one per subscribed active hook, and wake the
delivery task after commit. They never call out and never raise into the work they hear about:
recording runs in a savepoint, and a failure is logged (the work stands, the event is lost to
webhooks — the one case where it is, and the log says so).

The cost to the request that caused an event: one indexed query for the project's hooks and,
when a hook subscribes, one INSERT; the wake is one cache ``add`` after commit, and only the
first of a burst sends a message (``wake``). Nothing else waits for the receiver.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from annotation.models import ItemStage
from webhooks.models import Webhook, WebhookEvent

logger = logging.getLogger(__name__)

DELIVER_TASK = "webhooks.tasks.deliver_hook"
#: Item stages still collecting or waiting: a stage with none of these is complete.
LIVE_STATES = (ItemStage.State.OPEN, ItemStage.State.RESOLVING, ItemStage.State.ADJUDICATION)


def wake_key(hook_id: int) -> str:
    """The cache key that says "a delivery message for this hook is on its way"."""
    return f"webhooks:wake:{hook_id}"


def wake(hook_ids: Iterable[int], *, force: bool = False) -> None:
    """Send the delivery task for each hook unless a message is already on its way (a cache
    ``add``: of a burst of callers, one sends); ``force``: send anyway (the beat sweep, which
    repairs messages lost with the broker or a killed worker). Outside a transaction it sends
    at once."""
    from rungwise.debounce import enqueue_on_commit

    grace = float(getattr(settings, "WEBHOOKS_WAKE_GRACE_SECONDS", 60))
    for hook_id in dict.fromkeys(hook_ids):
        key = wake_key(hook_id)
        if force:
            cache.set(key, 1, timeout=grace)
        elif not cache.add(key, 1, timeout=grace):
            continue
        enqueue_on_commit(
            DELIVER_TASK,
            (hook_id,),
            on_failure=_forget(key),
            what=f"webhook {hook_id}'s delivery",
        )


def _forget(key: str) -> Callable[[], None]:
    """Clear a wake mark whose message could not be sent, so the next event tries again."""

    def forget() -> None:
        cache.delete(key)

    return forget


def _subscribed(project_id: int, kind: str) -> list[int]:
    return [
        hook_id
        for hook_id, kinds in Webhook.objects.filter(
            project_id=project_id, is_active=True
        ).values_list("pk", "events")
        if kind in (kinds or ())
    ]


def events_record(
    kind: str, project_id: int, data: dict[str, Any], *, dedupe_key: str = ""
) -> list[int]:
    """Write the event for every active hook of the project that subscribes to ``kind`` (in
    the caller's transaction) and wake their delivery after commit; the hooks' ids. Events with
    a ``dedupe_key`` a hook already holds are dropped for that hook."""
    hook_ids = _subscribed(project_id, kind)
    if not hook_ids:
        return []
    now = timezone.now()
    rows = [
        WebhookEvent(hook_id=hook_id, kind=kind, data=data, occurred_at=now, dedupe_key=dedupe_key)
        for hook_id in hook_ids
    ]
    WebhookEvent.objects.bulk_create(rows, ignore_conflicts=bool(dedupe_key))
    transaction.on_commit(lambda: wake(hook_ids))
    return hook_ids


def project_event_listener(kind: str, project_id: int, data: dict[str, Any]) -> None:
    """``annotation.events.on_project_event``: record it (the engine runs this in a savepoint
    and logs a failure)."""
    events_record(kind, project_id, data)


def item_stage_decided_listener(item_stage: Any, resolution: Any) -> None:
    """``annotation.events.on_item_stage_decided`` (inside the decision's transaction): the
    event ``item_stage.decided`` (an item stage sent on to a reviewer is announced by the
    engine as ``item.needs_adjudication`` instead), and a look at the stage's completion after
    commit. Runs in a savepoint and swallows its own failure: a decision never fails because of
    a webhook."""
    try:
        with transaction.atomic():
            if item_stage.state != ItemStage.State.ADJUDICATION:
                events_record(
                    "item_stage.decided",
                    item_stage.stage.project_id,
                    {
                        "item": {
                            "id": item_stage.item_id,
                            "external_id": item_stage.item.external_id,
                        },
                        "stage": {"id": item_stage.stage_id, "slug": item_stage.stage.slug},
                        "item_stage_id": item_stage.pk,
                        "state": item_stage.state,
                        "decision": {
                            "value": resolution.value,
                            "status": resolution.status,
                            "outcome": resolution.outcome,
                            "by_hand": resolution.decided_by_id is not None,
                        },
                    },
                )
            if _subscribed(item_stage.stage.project_id, "stage.completed"):
                stage_id = item_stage.stage_id
                transaction.on_commit(lambda: stages_completion_check([stage_id]))
    except Exception:
        logger.exception("webhooks: could not record the decision of item stage %s", item_stage.pk)


def item_stages_resolved_listener(item_stage_ids: Iterable[int]) -> None:
    """``annotation.events.on_item_stages_resolved`` (after commit): the stages of these item
    stages may be complete now (decisions by hand, discards)."""
    stage_ids = set(
        ItemStage.objects.filter(pk__in=list(item_stage_ids)).values_list("stage_id", flat=True)
    )
    stages_completion_check(stage_ids)


def stages_completion_check(stage_ids: Iterable[int]) -> None:
    """Record ``stage.completed`` for each of these stages with items and none live (after
    commit). Once per completion: the dedupe key holds the stage's last decision time, so the
    racing checks of its last two decisions record it once, and a stage reopened and completed
    again is announced again."""
    from annotation.models import Stage

    for stage in Stage.objects.filter(pk__in=list(stage_ids)).only("pk", "slug", "project_id"):
        if not _subscribed(stage.project_id, "stage.completed"):
            continue
        counts = ItemStage.objects.filter(stage=stage).aggregate(
            total=Count("pk"),
            live=Count("pk", filter=Q(state__in=LIVE_STATES)),
            discarded=Count("pk", filter=Q(state=ItemStage.State.DISCARDED)),
            last=Max("resolved_at"),
        )
        if not counts["total"] or counts["live"] or counts["last"] is None:
            continue
        with transaction.atomic():
            events_record(
                "stage.completed",
                stage.project_id,
                {
                    "stage": {"id": stage.pk, "slug": stage.slug},
                    "items": counts["total"],
                    "discarded": counts["discarded"],
                    "completed_at": counts["last"].isoformat(),
                },
                dedupe_key=f"stage.completed:{stage.pk}:{counts['last'].isoformat()}",
            )
