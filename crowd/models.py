"""Crowd studies: a stage of a project offered to paid participants from Prolific, MTurk or a
plain link (CONTRIBUTING.md, "Models hold data and constraints").

A Study names the stage participants work on (and optionally a separate practice stage), how
many places it has, how many items each participant does (the quota), its time limit, the
consent text and instructions, the practice and attention-check rules and the codes that send
participants back to their platform. A Participant is one person of a study: their platform id
(for payment only; never exported, releases use pseudonyms), the Django user created for them
(no password) and where they are in the study.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Project, Stage


class Study(models.Model):
    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk (ExternalQuestion)"
        LINK = "link", "Plain link (?pid=…)"

    class PracticeRule(models.TextChoices):
        NONE = "none", "No practice"
        ANSWER_ALL = "answer_all", "Answer every practice item before real items"

    class OnReturn(models.TextChoices):
        KEEP = "keep", "Keep their annotations"
        WITHDRAW = "withdraw", "Withdraw their annotations (the items' slots reopen)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="crowd_studies")
    stage = models.ForeignKey(Stage, on_delete=models.PROTECT, related_name="crowd_studies")
    practice_stage = models.ForeignKey(
        Stage,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="crowd_practice_studies",
        help_text="Where the practice items are, when not in the study's stage.",
    )
    name = models.CharField(max_length=200)
    token = models.CharField(max_length=64, unique=True, help_text="The study URL: /s/<token>/.")
    platform = models.CharField(max_length=10, choices=Platform.choices, default=Platform.PROLIFIC)
    platform_study_id = models.CharField(
        max_length=100,
        blank=True,
        help_text="Prolific's STUDY_ID or MTurk's hitId; when set, entries naming another are "
        "refused as forged.",
    )
    places = models.PositiveIntegerField(default=10)
    quota = models.PositiveIntegerField(default=20, help_text="Items per participant.")
    time_limit_minutes = models.PositiveIntegerField(default=60)
    consent_text = models.TextField()
    instructions = models.TextField(blank=True)
    practice_rule = models.CharField(
        max_length=12, choices=PracticeRule.choices, default=PracticeRule.ANSWER_ALL
    )
    max_check_failures = models.PositiveIntegerField(
        default=1, help_text="Attention checks a participant may fail; one more screens them out."
    )
    too_fast_seconds = models.FloatField(
        default=2.0,
        help_text="A median time per item below this suggests rejecting the participant.",
    )
    completion_code = models.CharField(max_length=64)
    screenout_code = models.CharField(max_length=64, blank=True)
    on_return = models.CharField(max_length=10, choices=OnReturn.choices, default=OnReturn.KEEP)
    excluded_ids = models.TextField(
        blank=True, help_text="Platform ids refused entry, one a line (earlier participants)."
    )
    is_open = models.BooleanField(default=True)
    signed_links = models.BooleanField(
        default=False,
        help_text="Prolific only: every entry must carry Prolific's signed token (JWT), checked "
        "against the key set in PROLIFIC_JWKS (crowd/signing.py); unsigned or badly signed "
        "entries are refused.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"

    def __str__(self) -> str:
        return self.name

    @property
    def excluded(self) -> set[str]:
        return {line.strip() for line in self.excluded_ids.splitlines() if line.strip()}


class Participant(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "In progress"
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out"
        RETURNED = "returned", "Returned"
        TIMED_OUT = "timed_out", "Timed out"
        REJECTED = "rejected", "Rejected"

    #: Statuses that hold one of the study's places (returned, timed-out and rejected places
    #: reopen, as they do on Prolific).
    PLACE_STATUSES = (Status.ACTIVE, Status.COMPLETED, Status.SCREENED_OUT)

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="participants")
    # PROTECT: the account holds the participant's annotations.
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="crowd_participant"
    )
    platform_id = models.CharField(
        max_length=100, help_text="PROLIFIC_PID, workerId or pid: for payment, never exported."
    )
    session_id = models.CharField(
        max_length=100, blank=True, help_text="SESSION_ID or assignmentId."
    )
    platform_study_id = models.CharField(max_length=100, blank=True)
    turk_submit_to = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    reason = models.CharField(max_length=300, blank=True)
    started_at = models.DateTimeField()
    consented_at = models.DateTimeField(null=True, blank=True)
    instructed_at = models.DateTimeField(null=True, blank=True)
    practice_done_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    platform_status = models.CharField(
        max_length=20, blank=True, help_text="The submission's status on the platform, last synced."
    )
    withdrawn = models.PositiveIntegerField(
        default=0, help_text="Annotations withdrawn when they left (the study's on_return)."
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    answers_sealed_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The last resume without proof that it was the participant (crowd.services."
        "participant_enter): answers given before it are never shown or changed again.",
    )

    class Meta:
        ordering = ["started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "platform_id"], name="crowd_participant_once_per_study"
            )
        ]
        indexes = [
            models.Index(
                fields=["started_at"], condition=Q(status="active"), name="crowd_active_idx"
            )
        ]

    def __str__(self) -> str:
        return f"participant {self.pk} of {self.study_id} ({self.status})"


class BonusPayment(models.Model):
    """Bonuses a researcher pays to chosen participants of a Prolific study, sent the way
    Prolific documents it: set up (one bulk payment) then pay (crowd.services.bonus_payment_send,
    run by the task crowd.tasks.pay_bonus). ``bonuses`` holds ``[platform id, amount]`` pairs
    (amounts as strings with two decimals, in the study's currency); platform ids stay here, for
    payment only, like the participants'."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be set up"
        SET_UP = "set_up", "Set up on Prolific"
        PAYING = "paying", "Payment sent"
        PAID = "paid", "Paid"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="bonus_payments")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    bonuses = models.JSONField()
    total = models.DecimalField(max_digits=12, decimal_places=2)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    prolific_id = models.CharField(
        max_length=100, blank=True, help_text="The bulk bonus payment's id on Prolific."
    )
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"bonus payment {self.pk} of {self.study_id} ({self.status})"
