"""Delivering a hook's events: one signed POST per batch, oldest events first, with back-off,
the delivery log and automatic disabling (webhooks/README.md, "Delivery").

``webhook_deliver(hook_id=...)`` is the one step the Celery task repeats:

1. Lock the hook row (``SELECT … FOR NO KEY UPDATE SKIP LOCKED``: a second worker at the same
   hook skips it, and events can still be written meanwhile — their foreign key takes only a
   key-share lock). An inactive hook, or one whose pace or back-off says "not yet", is left.
2. Take its oldest pending events, at most ``batch_size``, and POST them as one JSON body,
   signed (webhooks/signing.py), through the guarded client (webhooks/addresses.py), with
   ``settings.WEBHOOKS_TIMEOUT_SECONDS``.
3. Log the attempt (``WebhookDelivery``: outcome, status, response time, attempt number). A
   2xx marks the events delivered and sets the next request ``60 / requests_per_minute``
   seconds on; anything else (a status, a timeout, a refused address) leaves them pending and
   backs off exponentially (``WEBHOOKS_BACKOFF_SECONDS`` × 2^(failures − 1), at most
   ``WEBHOOKS_BACKOFF_MAX_SECONDS``); the ``WEBHOOKS_DISABLE_AFTER_FAILURES``-th failure in a
   row disables the hook and tells the project's admins.
4. Commit. The request happened inside the transaction: a worker killed before the commit
   leaves the events pending (and the lock released with its connection), so they are sent
   again — at least once, never lost. A receiver drops event ids it has already seen.

Events go out in the order they were written, and a failed batch is retried before anything
newer: one item's events (written by transactions that follow each other) arrive in order.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx2
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotation.models import Project
from webhooks.addresses import RefusedConnection, guarded_client
from webhooks.models import Webhook, WebhookDelivery, WebhookEvent
from webhooks.signing import signed_headers

logger = logging.getLogger(__name__)

#: What ``webhook_deliver`` did.
SENT, FAILED, BUSY, WAITING, IDLE = "sent", "failed", "busy", "waiting", "idle"


@dataclass(frozen=True)
class Attempt:
    """How one POST went."""

    outcome: str  # WebhookDelivery.Outcome
    status_code: int | None
    response_ms: int | None
    error: str


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def body_for(hook: Webhook, project: Project, events: list[dict[str, Any]], attempt: int) -> bytes:
    """The JSON body of a request (documented in the OpenAPI schema, webhooks/schema.py)."""
    document = {
        "webhook": {"id": hook.pk, "name": hook.name},
        "project": {"id": project.pk, "slug": project.slug},
        "attempt": attempt,
        "events": events,
    }
    return json.dumps(document, cls=DjangoJSONEncoder, separators=(",", ":")).encode()


def event_document(event: WebhookEvent) -> dict[str, Any]:
    """One event of a body."""
    return {
        "id": str(event.event_id),
        "type": event.kind,
        "occurred_at": event.occurred_at.isoformat(),
        "data": event.data,
    }


def post(hook: Webhook, body: bytes, delivery_id: str) -> Attempt:
    """POST ``body`` to the hook's URL, signed; never raises for the receiver's faults."""
    headers = signed_headers(hook.secret, body, delivery_id)
    started = time.perf_counter()
    try:
        with guarded_client(_setting("WEBHOOKS_TIMEOUT_SECONDS", 10)) as client:
            response = client.post(hook.url, content=body, headers=headers)
    except httpx2.TimeoutException as error:
        elapsed = int((time.perf_counter() - started) * 1000)
        return Attempt(
            WebhookDelivery.Outcome.FAILED, None, elapsed, f"timed out ({type(error).__name__})"
        )
    except httpx2.HTTPError as error:
        refused = _refusal(error)
        if refused is not None:
            return Attempt(WebhookDelivery.Outcome.REFUSED, None, None, str(refused)[:500])
        elapsed = int((time.perf_counter() - started) * 1000)
        message = f"{type(error).__name__}: {error}"[:500]
        return Attempt(WebhookDelivery.Outcome.FAILED, None, elapsed, message)
    elapsed = int((time.perf_counter() - started) * 1000)
    if 200 <= response.status_code < 300:
        return Attempt(WebhookDelivery.Outcome.DELIVERED, response.status_code, elapsed, "")
    return Attempt(
        WebhookDelivery.Outcome.FAILED,
        response.status_code,
        elapsed,
        f"the receiver answered {response.status_code}",
    )


def _refusal(error: BaseException) -> RefusedConnection | None:
    """The address check's refusal behind an HTTP error (httpx wraps the transport's
    exceptions in its own), if that is what it was."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, RefusedConnection):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def backoff_seconds(failures: int) -> float:
    """The wait after the ``failures``-th failure in a row (1, 2, …): exponential, capped."""
    base = _setting("WEBHOOKS_BACKOFF_SECONDS", 10)
    ceiling = _setting("WEBHOOKS_BACKOFF_MAX_SECONDS", 3600)
    return float(min(ceiling, base * 2 ** max(failures - 1, 0)))


def pending(hook_id: int) -> QuerySet[WebhookEvent]:
    return WebhookEvent.objects.filter(hook_id=hook_id, delivered_at__isnull=True)


@transaction.atomic
def webhook_deliver(*, hook_id: int, now: datetime | None = None) -> str:
    """One step of a hook's delivery (the module docstring): SENT, FAILED, BUSY (another worker
    holds it), WAITING (not yet: pace or back-off) or IDLE (inactive, gone, nothing pending).
    Takes the hook's row lock for the step, the request included. ``now``: the moment the
    pace and back-off are compared with (tests step past them)."""
    hook = (
        Webhook.objects.select_for_update(no_key=True, skip_locked=True)
        .select_related("project")
        .filter(pk=hook_id)
        .first()
    )
    if hook is None:
        return BUSY if Webhook.objects.filter(pk=hook_id).exists() else IDLE
    if not hook.is_active:
        return IDLE
    now = now or timezone.now()
    if hook.next_attempt_at is not None and hook.next_attempt_at > now:
        return WAITING
    events = list(pending(hook.pk).order_by("pk")[: hook.batch_size])
    if not events:
        return IDLE
    attempt_number = hook.consecutive_failures + 1
    delivery_id = str(uuid.uuid4())
    started = timezone.now()
    body = body_for(hook, hook.project, [event_document(e) for e in events], attempt_number)
    attempt = post(hook, body, delivery_id)
    delivery = WebhookDelivery.objects.create(
        hook=hook,
        delivery_id=delivery_id,
        started_at=started,
        attempt=attempt_number,
        event_count=len(events),
        outcome=attempt.outcome,
        status_code=attempt.status_code,
        response_ms=attempt.response_ms,
        error=attempt.error,
    )
    done = timezone.now()
    if attempt.outcome == WebhookDelivery.Outcome.DELIVERED:
        WebhookEvent.objects.filter(pk__in=[e.pk for e in events]).update(
            delivered_at=done, delivery=delivery
        )
        hook.consecutive_failures = 0
        hook.last_success_at = done
        hook.next_attempt_at = done + timedelta(seconds=60 / hook.requests_per_minute)
        hook.save(update_fields=["consecutive_failures", "last_success_at", "next_attempt_at"])
        return SENT
    _failed(hook, attempt, done)
    return FAILED


def _failed(hook: Webhook, attempt: Attempt, now: datetime) -> None:
    """Count a failure on the locked ``hook``: back off, or disable it at the limit."""
    hook.consecutive_failures += 1
    hook.next_attempt_at = now + timedelta(seconds=backoff_seconds(hook.consecutive_failures))
    fields = ["consecutive_failures", "next_attempt_at"]
    limit = int(_setting("WEBHOOKS_DISABLE_AFTER_FAILURES", 10))
    if hook.consecutive_failures >= limit:
        hook.is_active = False
        hook.disabled_at = now
        hook.disabled_reason = (
            f"Disabled after {hook.consecutive_failures} failed attempts in a row; the last: "
            f"{attempt.error or attempt.outcome}."
        )[:500]
        fields += ["is_active", "disabled_at", "disabled_reason"]
        hook_id = hook.pk
        transaction.on_commit(lambda: admins_tell_disabled(hook_id))
    hook.save(update_fields=fields)


def admins_tell_disabled(hook_id: int) -> int:
    """E-mail the project's admins (those with an address) that the hook was disabled, after
    commit; how many were sent to. A mail failure is logged: the Webhooks tab says it too."""
    from django.core.mail import send_mail

    from annotation.models import Membership, Role

    hook = Webhook.objects.select_related("project").filter(pk=hook_id).first()
    if hook is None or hook.is_active:
        return 0
    addresses = sorted(
        set(
            Membership.objects.filter(project=hook.project, role=Role.ADMIN)
            .exclude(user__email="")
            .values_list("user__email", flat=True)
        )
    )
    if not addresses:
        return 0
    try:
        send_mail(
            f"[Rungwise] Webhook {hook.name} of {hook.project.name} was disabled",
            f"{hook.disabled_reason}\n\nURL: {hook.url}\n\nEvents wait in its outbox; re-enable "
            "the hook on the project's Webhooks tab once the receiver answers again.",
            None,
            addresses,
        )
    except Exception:
        logger.exception("webhooks: could not tell the admins that hook %s was disabled", hook_id)
        return 0
    return len(addresses)


def webhook_test_deliver(*, hook_id: int) -> WebhookDelivery | None:
    """Send one ``ping`` event to the hook now (the "Send test event" button), active or not,
    and log it as a test; the outbox, the failure count and the pace are left alone."""
    hook = Webhook.objects.select_related("project").filter(pk=hook_id).first()
    if hook is None:
        return None
    now = timezone.now()
    event = {
        "id": str(uuid.uuid4()),
        "type": "ping",
        "occurred_at": now.isoformat(),
        "data": {"message": "A test event from Rungwise: your receiver is reachable."},
    }
    delivery_id = str(uuid.uuid4())
    attempt = post(hook, body_for(hook, hook.project, [event], 1), delivery_id)
    return WebhookDelivery.objects.create(
        hook=hook,
        delivery_id=delivery_id,
        started_at=now,
        attempt=1,
        event_count=1,
        is_test=True,
        outcome=attempt.outcome,
        status_code=attempt.status_code,
        response_ms=attempt.response_ms,
        error=attempt.error,
    )


def next_wait(hook_id: int) -> float | None:
    """Seconds until the hook's next step is due when it is active and has events pending;
    None when there is nothing to do."""
    hook = Webhook.objects.filter(pk=hook_id, is_active=True).first()
    if hook is None or not pending(hook_id).exists():
        return None
    if hook.next_attempt_at is None:
        return 0.0
    return max(0.0, (hook.next_attempt_at - timezone.now()).total_seconds())


def hooks_due(now: datetime | None = None) -> list[int]:
    """Active hooks with events pending whose next step is due (the beat sweep's list)."""
    from django.db.models import Exists, OuterRef, Q

    now = now or timezone.now()
    return list(
        Webhook.objects.filter(is_active=True)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(
            Exists(WebhookEvent.objects.filter(hook_id=OuterRef("pk"), delivered_at__isnull=True))
        )
        .values_list("pk", flat=True)
    )
