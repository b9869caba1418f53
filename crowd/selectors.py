"""Reads of crowd studies: the researcher's figures and the participants' review table (and
its CSV), the Crowd tab's lists, and what the participant's pages say about a study."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from annotation.kinds import get_kind
from annotation.models import Annotation, Item, ItemStage, Project, Stage
from crowd.models import BonusPayment, Participant, Study
from crowd.services.participants import _failed, checks_phrase


def participant_rows(study: Study) -> list[dict[str, Any]]:
    """One row per participant, in the order they entered: platform id, status, items done,
    failed checks, median seconds per item, minutes taken, and the suggestion (approve /
    reject / nothing yet) with its reason.

    The seconds per item that decide "too fast" are the server's: from the item's lease
    (Assignment.created_at) to its submit (Assignment.finished_at, the first version's time,
    so changing an answer later adds nothing). The browser's own figure
    (Annotation.seconds_spent, which a participant controls) is kept beside it as
    ``median_client_seconds``, a second signal that never decides."""
    participants = list(Participant.objects.filter(study=study).order_by("started_at", "pk"))
    kind = get_kind(study.stage.kind)
    seconds: dict[int, list[float]] = defaultdict(list)
    client_seconds: dict[int, list[float]] = defaultdict(list)
    done: dict[int, int] = defaultdict(int)
    failures: dict[int, int] = defaultdict(int)
    rows = Annotation.objects.filter(
        annotator_id__in=[p.user_id for p in participants], item_stage__stage_id=study.stage_id
    ).values_list(
        "annotator_id", "seconds_spent", "payload", "item_stage__gold", "item_stage__item__purpose",
        "item_stage__item__payload", "assignment__created_at", "assignment__finished_at",
    )  # fmt: skip
    for annotator_id, spent, payload, gold, purpose, item_payload, leased, submitted in rows:
        if purpose == Item.Purpose.PRACTICE:
            continue
        done[annotator_id] += 1
        if leased is not None and submitted is not None:
            seconds[annotator_id].append(max((submitted - leased).total_seconds(), 0.0))
        if spent is not None:
            client_seconds[annotator_id].append(spent)
        if purpose == Item.Purpose.ATTENTION_CHECK and _failed(
            kind, payload, gold, item_payload or {}
        ):
            failures[annotator_id] += 1
    table = []
    for participant in participants:
        median = (
            statistics.median(seconds[participant.user_id])
            if seconds[participant.user_id]
            else None
        )
        client_median = (
            statistics.median(client_seconds[participant.user_id])
            if client_seconds[participant.user_id]
            else None
        )
        minutes = (
            (participant.finished_at - participant.started_at).total_seconds() / 60
            if participant.finished_at
            else None
        )
        failed = failures[participant.user_id]
        suggestion, reason, category = "", "", ""
        if (
            participant.status == Participant.Status.SCREENED_OUT
            or failed > study.max_check_failures
        ):
            suggestion, category = "reject", "FAILED_CHECK"
            reason = f"failed {checks_phrase(failed)} (FAILED_CHECK)"
            if failed <= study.max_check_failures and participant.reason:
                # Screened out by a check outside the study's own (services.participant_screen_out:
                # gold accuracy), whose reason says which.
                reason = f"{participant.reason} (FAILED_CHECK)"
        elif participant.status == Participant.Status.COMPLETED:
            if median is not None and median < study.too_fast_seconds:
                suggestion, category = "reject", "TOO_QUICKLY"
                reason = (
                    f"too fast: median {median:.1f} s per item, under "
                    f"{study.too_fast_seconds:g} s (TOO_QUICKLY)"
                )
            else:
                suggestion = "approve"
                reason = f"quota met; {checks_phrase(failed)} failed" if failed else "quota met"
        table.append(
            {
                "participant": participant,
                "platform_id": participant.platform_id,
                "status": participant.status,
                "status_label": participant.get_status_display(),
                "items_done": done[participant.user_id],
                "checks_failed": failed,
                "median_seconds": median,
                "median_client_seconds": client_median,
                "minutes": minutes,
                "suggestion": suggestion,
                "reason": reason,
                "category": category,
            }
        )
    return table


def study_summary(study: Study, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Places filled, participants per status, median minutes of the finished, items done."""
    rows = participant_rows(study) if rows is None else rows
    by_status: dict[str, int] = defaultdict(int)
    for row in rows:
        by_status[row["status"]] += 1
    minutes = [
        row["minutes"]
        for row in rows
        if row["minutes"] is not None and row["status"] == Participant.Status.COMPLETED
    ]
    filled = sum(by_status[status] for status in Participant.PLACE_STATUSES)
    return {
        "places": study.places,
        "filled": filled,
        "in_progress": by_status[Participant.Status.ACTIVE],
        "completed": by_status[Participant.Status.COMPLETED],
        "screened_out": by_status[Participant.Status.SCREENED_OUT],
        "returned": by_status[Participant.Status.RETURNED],
        "timed_out": by_status[Participant.Status.TIMED_OUT],
        "rejected": by_status[Participant.Status.REJECTED],
        "median_minutes": statistics.median(minutes) if minutes else None,
        "items_done": sum(row["items_done"] for row in rows),
        "target_items": study.places * study.quota,
    }


def project_stages(project: Project) -> list[Stage]:
    """The project's stages in pipeline order (the study forms' choices)."""
    return list(Stage.objects.filter(project=project).order_by("position"))


def project_studies(project: Project) -> QuerySet[Study]:
    """The project's studies with their stages (the Crowd tab's list)."""
    return Study.objects.filter(project=project).select_related("stage")


def bonus_payments(study: Study, *, limit: int = 20) -> list[BonusPayment]:
    """The study's newest bonus payments (the study page lists ``limit``)."""
    return list(study.bonus_payments.all()[:limit])


def preview_item(study: Study) -> Item | None:
    """A sample regular item of the study's stage (MTurk's preview), the first one in."""
    sample = (
        ItemStage.objects.filter(stage=study.stage, item__purpose=Item.Purpose.REGULAR)
        .select_related("item")
        .order_by("pk")
        .first()
    )
    return sample.item if sample else None


def study_has_practice(study: Study) -> bool:
    """Whether participants of ``study`` get practice items (the instructions say so)."""
    return (
        study.practice_rule != Study.PracticeRule.NONE
        and ItemStage.objects.filter(
            stage_id=study.practice_stage_id or study.stage_id, item__purpose=Item.Purpose.PRACTICE
        ).exists()
    )


def study_has_checks(study: Study) -> bool:
    """Whether the study's stage holds attention checks (the instructions say so)."""
    return ItemStage.objects.filter(
        stage_id=study.stage_id, item__purpose=Item.Purpose.ATTENTION_CHECK
    ).exists()


def is_participant_account(user_id: int) -> bool:
    """Whether the account ``user_id`` is a study participant's (not a researcher's or an
    annotator's own)."""
    return Participant.objects.filter(user_id=user_id).exists()


#: The participants' review CSV's columns (participants_csv).
PARTICIPANTS_CSV_HEADER = [
    "participant_id", "status", "items_done", "checks_failed", "median_seconds_per_item",
    "median_browser_seconds_per_item", "minutes", "suggestion", "reason", "platform_status",
]  # fmt: skip


def _rounded(value: float | None, digits: int) -> float | str:
    return round(value, digits) if value is not None else ""


def participants_csv(study: Study) -> tuple[list[str], Iterator[list[Any]]]:
    """The study page's review table as CSV rows (header, rows): one row per participant
    (participant_rows), figures rounded, empty where there is none yet."""
    rows = (
        [
            row["platform_id"],
            row["status"],
            row["items_done"],
            row["checks_failed"],
            _rounded(row["median_seconds"], 2),
            _rounded(row["median_client_seconds"], 2),
            _rounded(row["minutes"], 1),
            row["suggestion"],
            row["reason"],
            row["participant"].platform_status,
        ]
        for row in participant_rows(study)
    )
    return PARTICIPANTS_CSV_HEADER, rows
