"""Agreement figures kept over time, and the state of their coalesced refresh."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Stage


class AgreementSnapshot(models.Model):
    """An agreement figure for a stage at one moment, kept so dashboards can show the trend."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="agreement_snapshots")
    metric = models.CharField(max_length=40)
    value = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    n_items = models.PositiveIntegerField(default=0)
    n_annotators = models.PositiveIntegerField(default=0)
    n_annotations = models.PositiveIntegerField(default=0)
    details = models.JSONField(default=dict, blank=True)
    computed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "annotation_agreementsnapshot"
        ordering = ["stage", "metric", "computed_at"]
        indexes = [models.Index(fields=["stage", "metric", "computed_at"])]

    def __str__(self) -> str:
        return f"{self.metric} = {self.value!r} ({self.computed_at:%Y-%m-%d %H:%M})"


class AgreementRefresh(models.Model):
    """The coalesced refresh of one stage's agreement figures (agreement.services; the
    protocol is rungwise/debounce.py's). One row per stage, created by the first change the
    stage reports (a stage with no row has never changed: nothing computed, nothing stale).

    The figures are stale while ``changes`` differs from ``computed_changes``; a refresh is on
    its way while ``queued_at`` is set. Written only by UPDATE statements, so that concurrent
    writers never overwrite each other's counts."""

    stage = models.OneToOneField(
        Stage, on_delete=models.CASCADE, primary_key=True, related_name="agreement_refresh"
    )
    changes = models.PositiveBigIntegerField(
        default=0, help_text="Bumped after each resolution of an item in the stage."
    )
    computed_changes = models.PositiveBigIntegerField(
        default=0, help_text="changes as of the last computed figures."
    )
    queued_at = models.DateTimeField(
        null=True, blank=True, help_text="Set while a refresh message is on its way."
    )
    computed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the figures were last computed."
    )

    def __str__(self) -> str:
        return f"stage {self.stage_id}: {self.computed_changes}/{self.changes}"

    @property
    def stale(self) -> bool:
        """Whether changes arrived since the figures were last computed."""
        return self.changes != self.computed_changes

    @classmethod
    def of_stage(cls, stage_id: int) -> AgreementRefresh:
        """The stage's refresh state; an unsaved row of zeros for a stage that never changed."""
        return cls.objects.filter(pk=stage_id).first() or cls(stage_id=stage_id)


class SpotCheck(models.Model):
    """A reviewer's second look at an item stage its annotators had already settled (accepted),
    drawn by the stage's spot-check sample (``agreement.spot_checks``): confirmed, or overturned
    — the overturn itself is a reviewer's decision through the engine's adjudication path, and
    this row keeps what was checked. One per item stage: a checked item stage leaves the sample."""

    class Verdict(models.TextChoices):
        CONFIRMED = "confirmed", "Confirmed"
        OVERTURNED = "overturned", "Overturned"

    item_stage = models.OneToOneField(
        "annotation.ItemStage", on_delete=models.CASCADE, related_name="spot_check"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    verdict = models.CharField(max_length=12, choices=Verdict.choices)
    #: The decision that was checked (the resolution's value before any overturn).
    checked_value = models.JSONField(null=True, blank=True)
    #: The reviewer's value when overturned.
    value = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.item_stage_id}: {self.verdict}"
