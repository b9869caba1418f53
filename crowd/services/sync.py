"""Prolific's side of a study (CONTRIBUTING.md, "Services own the transaction"): the sync of
submission statuses (asked for by ``study_sync_request``, run by the task
crowd.tasks.sync_prolific_study), and the study page's approvals and rejections sent to
Prolific."""

from __future__ import annotations

import logging
from typing import Any

from django.utils import timezone

from annotation import api as engine
from annotation.errors import ApplicationError
from crowd.models import Participant, Study
from crowd.services.participants import participant_leave

logger = logging.getLogger(__name__)

#: Prolific submission statuses that end a participant's session here.
PROLIFIC_LEAVING = {
    "RETURNED": Participant.Status.RETURNED,
    "TIMED-OUT": Participant.Status.TIMED_OUT,
    "REJECTED": Participant.Status.REJECTED,
}


def study_sync_prolific(*, study: Study, client: Any) -> dict[str, int]:
    """Read the study's submissions from Prolific (``client``: crowd.prolific.ProlificClient)
    and record each participant's status there; returned, timed-out and rejected ones leave
    (participant_leave). Returns counts per outcome. Safe to run twice."""
    if not study.platform_study_id:
        raise ApplicationError(
            "Set the study's Prolific STUDY_ID before syncing.", {"platform_study_id": "required"}
        )
    submissions = client.study_submissions(study.platform_study_id)
    counts = {"seen": 0, "left": 0, "unknown": 0}
    by_pid = {row["participant_id"]: row for row in submissions if row.get("participant_id")}
    for participant in Participant.objects.filter(study=study, platform_id__in=list(by_pid)):
        row = by_pid[participant.platform_id]
        status = str(row.get("status") or "")
        counts["seen"] += 1
        if participant.platform_status != status:
            Participant.objects.filter(pk=participant.pk).update(platform_status=status[:20])
        leaving = PROLIFIC_LEAVING.get(status)
        if leaving and participant.status != leaving:
            participant_leave(participant=participant, status=leaving, reason=f"Prolific: {status}")
            counts["left"] += 1
    counts["unknown"] = len(by_pid) - counts["seen"]
    Study.objects.filter(pk=study.pk).update(synced_at=timezone.now())
    return counts


#: Platform statuses after which a submission takes no decision any more.
DECIDED = {"APPROVED", "REJECTED", "RETURNED", "TIMED-OUT", "SCREENED OUT"}


def study_apply_suggestions(*, study: Study, client: Any, message: str) -> dict[str, int]:
    """Send the study page's suggestions to Prolific (``client``: crowd.prolific.ProlificClient):
    approve the suggested approvals and reject the suggested rejections with ``message`` (at
    least 100 characters, shown to the participant) and the suggestion's category. Submissions
    are named by the participant's SESSION_ID (Prolific's submission id); each decision is
    recorded as the participant's platform status, so a second run sends nothing again, and a
    rejected participant leaves (their work kept or withdrawn by the study's setting). A
    failing call stops the run with ProlificError; decisions sent before it stay recorded."""
    from crowd.selectors import participant_rows

    if study.platform != Study.Platform.PROLIFIC:
        raise ApplicationError("Only Prolific studies are decided through Prolific's API.")
    counts = {"approved": 0, "rejected": 0, "skipped": 0}
    for row in participant_rows(study):
        participant = row["participant"]
        if not row["suggestion"]:
            continue
        if participant.platform_status in DECIDED or not participant.session_id:
            counts["skipped"] += 1
            continue
        if row["suggestion"] == "approve":
            client.approve(participant.session_id)
            Participant.objects.filter(pk=participant.pk).update(platform_status="APPROVED")
            counts["approved"] += 1
        else:
            client.reject(participant.session_id, message=message, category=row["category"])
            Participant.objects.filter(pk=participant.pk).update(platform_status="REJECTED")
            participant_leave(participant=participant, status="rejected", reason=row["reason"])
            counts["rejected"] += 1
    return counts


def study_sync_request(*, study: Study) -> None:
    """Ask for ``study``'s statuses to be read from Prolific (study_sync_prolific, by the task
    crowd.tasks.sync_prolific_study) once the caller's transaction commits; a broker outage
    is logged, not raised (annotation.services.enqueue_on_commit)."""
    from crowd.tasks import sync_prolific_study

    engine.enqueue_on_commit(sync_prolific_study, study.pk)
