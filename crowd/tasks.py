"""Crowd tasks (CONTRIBUTING.md, "Celery tasks"): the time-limit sweep and Prolific syncs."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from crowd import services
from crowd.models import Study

logger = logging.getLogger(__name__)


@shared_task(name="crowd.tasks.time_out_participants")
def time_out_participants() -> int:
    """Beat: sessions past their study's time limit end (timed out, leases released)."""
    return services.participants_time_out()


@shared_task(name="crowd.tasks.sync_prolific_study")
def sync_prolific_study(study_id: int) -> dict | None:
    """Submission statuses of one study from Prolific; returned / timed-out / rejected
    participants leave (leases released, annotations kept or withdrawn by the study)."""
    from crowd.prolific import ProlificClient

    study = Study.objects.select_related("project").filter(pk=study_id).first()
    if study is None or study.platform != Study.Platform.PROLIFIC or not study.platform_study_id:
        return None
    return services.study_sync_prolific(study=study, client=ProlificClient())


@shared_task(name="crowd.tasks.sync_prolific_studies")
def sync_prolific_studies() -> int:
    """Beat: every open Prolific study with a STUDY_ID, when a token is configured; a failing
    study is logged and the others go on."""
    if not settings.PROLIFIC_TOKEN:
        return 0
    synced = 0
    studies = Study.objects.filter(platform=Study.Platform.PROLIFIC, is_open=True).exclude(
        platform_study_id=""
    )
    for study_id in studies.values_list("pk", flat=True):
        try:
            sync_prolific_study(study_id)
            synced += 1
        except Exception:
            logger.exception("Prolific sync of study %s failed", study_id)
    return synced


def _backoff(retries: int) -> float:
    """Seconds before the next retry of a bonus set-up: CROWD_BONUS_RETRY_SECONDS, doubling
    with each retry, at most 10 minutes."""
    return min(settings.CROWD_BONUS_RETRY_SECONDS * 2**retries, 600)


@shared_task(bind=True, name="crowd.tasks.pay_bonus", max_retries=6)
def pay_bonus(self, bonus_id: int) -> str:
    """Set up and pay one bonus payment on Prolific (crowd.services.bonus_payment_send). A
    set-up that Prolific may accept later (unreachable, 429, 5xx) is retried with a growing
    delay; a refused one, or one failing after the last retry, is left ``failed``."""
    from crowd.models import BonusPayment
    from crowd.prolific import ProlificClient, ProlificError

    try:
        return services.bonus_payment_send(bonus_id=bonus_id, client=ProlificClient())
    except ProlificError as error:
        if self.request.retries >= self.max_retries:
            BonusPayment.objects.filter(pk=bonus_id, status=BonusPayment.Status.PENDING).update(
                status=BonusPayment.Status.FAILED
            )
            logger.error("Bonus payment %s failed after retries: %s", bonus_id, error.message)
            return BonusPayment.Status.FAILED
        raise self.retry(exc=error, countdown=_backoff(self.request.retries)) from None
