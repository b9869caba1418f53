"""Bonuses of a Prolific study (CONTRIBUTING.md, "Services own the transaction"): set up from the
study page's amounts and a ``participant id,amount`` CSV (``bonus_payment_create``), then paid
through Prolific's API by the task crowd.tasks.pay_bonus (``bonus_payment_send``)."""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation import api as engine
from annotation.errors import ApplicationError
from crowd.models import BonusPayment, Participant, Study
from crowd.services.studies import shown

logger = logging.getLogger(__name__)

# --- Bonuses ---------------------------------------------------------------------------------

#: The largest bonus one participant may get in one payment (in the study's currency): a typo
#: guard (Prolific reads "30" as 30.00), not Prolific's limit.
MAX_BONUS = Decimal("100.00")
#: Participants in one payment: Prolific recommends at most 200 per bulk payment.
MAX_BONUSES = 200


def _bonus_amount(text: str, where: str) -> Decimal:
    raw = str(text or "").strip()
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise ApplicationError(
            f"{where}: {shown(raw)} is not an amount; write it like 1.50 (no currency sign).",
            {"amount": where},
        )
    if value <= 0 or value > MAX_BONUS:
        raise ApplicationError(
            f"{where}: a bonus must be more than 0 and at most {MAX_BONUS}.", {"amount": where}
        )
    if value != value.quantize(Decimal("0.01")):
        raise ApplicationError(
            f"{where}: {shown(raw)} has more than two decimals.", {"amount": where}
        )
    return value.quantize(Decimal("0.01"))


def bonus_rows(
    *, study: Study, amounts: Mapping[Any, str], csv_text: str = ""
) -> list[tuple[str, Decimal]]:
    """The bonuses a researcher asked for: ``amounts`` by participant pk (the study page's
    inputs; empty ones skipped) and ``csv_text`` (``participant id,amount`` a line, an optional
    header). Each participant of the study once, every amount valid, or ApplicationError naming
    the line or participant; nothing is written."""
    participants = {p.pk: p.platform_id for p in Participant.objects.filter(study=study)}
    known = set(participants.values())
    rows: list[tuple[str, Decimal]] = []
    seen: dict[str, str] = {}

    def add(platform_id: str, amount: str, where: str) -> None:
        if platform_id not in known:
            raise ApplicationError(
                f"{where}: {shown(platform_id)} is not a participant of this study.",
                {"participant": where},
            )
        if platform_id in seen:
            raise ApplicationError(
                f"{where}: {platform_id} already has a bonus in this payment ({seen[platform_id]}).",
                {"participant": where},
            )
        rows.append((platform_id, _bonus_amount(amount, where)))
        seen[platform_id] = where

    lines = _bonus_csv_lines(csv_text)
    asked = sum(1 for amount in amounts.values() if str(amount or "").strip()) + sum(
        1 for _number, line in lines if any(cell.strip() for cell in line)
    )
    if asked > MAX_BONUSES + 1:  # one line may be the header
        raise ApplicationError(
            f"{asked} bonuses: at most {MAX_BONUSES} in one payment, as Prolific "
            "recommends. Pay the rest in another.",
            {"bonuses": asked},
        )
    for key, amount in amounts.items():
        if str(amount or "").strip():
            pk = int(key) if str(key).isdigit() else None
            if pk not in participants:
                raise ApplicationError(
                    "Unknown participant in the bonus form.", {"participant": key}
                )
            add(participants[pk], amount, f"participant {participants[pk]}")
    for number, line in lines:
        cells = [cell.strip() for cell in line]
        if not any(cells):
            continue
        if number == 1 and len(cells) == 2 and cells[0].lower() in HEADER_NAMES:
            continue
        if len(cells) != 2:
            raise ApplicationError(
                f"CSV line {number}: write participant id,amount (two columns).",
                {"csv": number},
            )
        add(cells[0], cells[1], f"CSV line {number}")
    if not rows:
        raise ApplicationError(
            "Choose at least one participant and an amount.", {"bonuses": "empty"}
        )
    if len(rows) > MAX_BONUSES:
        raise ApplicationError(
            f"{len(rows)} bonuses: at most {MAX_BONUSES} in one payment, as Prolific "
            "recommends. Pay the rest in another.",
            {"bonuses": len(rows)},
        )
    return rows


HEADER_NAMES = {"participant_id", "pid", "prolific_pid", "participant"}


def _bonus_csv_lines(csv_text: str) -> list[tuple[int, list[str]]]:
    """The bonus CSV's records, each with the line it starts on. A text the CSV reader cannot
    read (a cell over its field limit, 131,072 characters; a stray carriage return) is an
    ApplicationError naming the line, never csv.Error."""
    reader = csv.reader(io.StringIO(csv_text or ""))
    lines: list[tuple[int, list[str]]] = []
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return lines
        except csv.Error as problem:
            detail = (
                "a cell is longer than the CSV reader takes (131,072 characters)"
                if "field limit" in str(problem)
                else f"not readable as CSV ({problem})"
            )
            raise ApplicationError(
                f"CSV line {start}: {detail}; write participant id,amount.", {"csv": start}
            ) from None
        lines.append((start, cells))


@transaction.atomic
def bonus_payment_create(
    *, study: Study, requested_by: Any, amounts: Mapping[Any, str], csv_text: str = ""
) -> BonusPayment:
    """A bonus payment of a Prolific study (see bonus_rows), sent by the task
    crowd.tasks.pay_bonus once the transaction commits."""

    if study.platform != Study.Platform.PROLIFIC or not study.platform_study_id:
        raise ApplicationError(
            "Bonuses are paid through Prolific: the study needs its Prolific STUDY_ID.",
            {"platform_study_id": "required"},
        )
    rows = bonus_rows(study=study, amounts=amounts, csv_text=csv_text)
    payment = BonusPayment.objects.create(
        study=study,
        requested_by=requested_by,
        bonuses=[[pid, str(amount)] for pid, amount in rows],
        total=sum((amount for _, amount in rows), Decimal("0.00")),
    )
    from crowd.tasks import pay_bonus

    engine.enqueue_on_commit(pay_bonus, payment.pk)
    return payment


def bonus_payment_send(*, bonus_id: int, client: Any) -> str:
    """Send one bonus payment to Prolific (``client``: crowd.prolific.ProlificClient): set it
    up (POST submissions/bonus-payments/), then pay it (POST bulk-bonus-payments/{id}/pay/).
    Returns the payment's status. Safe to run twice and concurrently: each step runs under the
    payment's row lock and only from its state; set-up errors raise ProlificError (the task
    retries those Prolific may answer later, crowd.prolific.retryable) after recording them.
    Paying is not idempotent on Prolific's side, so the payment is marked ``paying`` before the
    call and never sent again: a failed pay call leaves it ``failed`` with the error, for the
    researcher to check on Prolific."""
    from crowd.prolific import ProlificError, retryable

    failure: ProlificError | None = None
    pay_now = False
    with transaction.atomic():
        payment = BonusPayment.objects.select_for_update().select_related("study").get(pk=bonus_id)
        if payment.status == BonusPayment.Status.PENDING:
            payment.attempts += 1
            try:
                bulk_id = client.bonus_create(
                    payment.study.platform_study_id, [tuple(row) for row in payment.bonuses]
                )
            except ProlificError as error:
                failure = error
                payment.error = error.message[:2000]
                if not retryable(error):
                    payment.status = BonusPayment.Status.FAILED
                payment.save(update_fields=["attempts", "error", "status"])
            else:
                payment.prolific_id = bulk_id
                payment.status = BonusPayment.Status.SET_UP
                payment.error = ""
                payment.save(update_fields=["attempts", "prolific_id", "status", "error"])
        if failure is None and payment.status == BonusPayment.Status.SET_UP:
            # marked (and committed) before the call: whatever happens next, never sent twice
            payment.status = BonusPayment.Status.PAYING
            payment.save(update_fields=["status"])
            pay_now = True
    if failure is not None and retryable(failure):
        raise failure  # recorded above; the task retries it
    if not pay_now:
        return payment.status
    try:
        client.bonus_pay(payment.prolific_id)
    except ProlificError as error:
        BonusPayment.objects.filter(pk=bonus_id).update(
            status=BonusPayment.Status.FAILED,
            error=(
                f"{error.message} The payment was not sent again (Prolific's pay call is not "
                "idempotent): check the study's bonuses on Prolific."
            )[:2000],
        )
        return BonusPayment.Status.FAILED
    BonusPayment.objects.filter(pk=bonus_id).update(
        status=BonusPayment.Status.PAID, paid_at=timezone.now()
    )
    return BonusPayment.Status.PAID
