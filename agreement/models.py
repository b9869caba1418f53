"""Agreement figures kept over time."""

from __future__ import annotations

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
