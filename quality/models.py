"""What the quality app stores: each stage's thresholds (``QualityRule``) and the actions taken
on annotators (``QualityAction``: a pause or a screen-out, automatic or by hand, with the
figures that led to it, its undo and any withdrawal). Workflows live in quality/services.py."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Project, Stage


class QualityRule(models.Model):
    """A stage's thresholds. With ``acts`` on, once an annotator has ``min_gold`` gold answers
    and the 95 % Wilson interval of their gold accuracy lies wholly below ``min_accuracy``,
    they are paused on the stage (a study participant: screened out), and their earlier work
    in the stage is withdrawn when ``withdraw`` says so."""

    stage = models.OneToOneField(Stage, on_delete=models.CASCADE, related_name="quality_rule")
    # The stage's project, kept here so that the annotator gate's SQL (quality/gate.py) needs
    # no join to ask whether a project has a rule that acts.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    acts = models.BooleanField(
        default=False, help_text="Pause or screen out automatically when the rule is met."
    )
    min_gold = models.PositiveSmallIntegerField(
        default=5, help_text="Gold answers an annotator gives before any automatic action."
    )
    min_accuracy = models.FloatField(
        default=0.6,
        help_text="Act when the 95 % interval of an annotator's gold accuracy is wholly below.",
    )
    withdraw = models.BooleanField(
        default=False, help_text="Withdraw the person's earlier work in the stage when acting."
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(min_accuracy__gte=0) & Q(min_accuracy__lte=1),
                name="quality_rule_accuracy_is_a_share",
            ),
            models.CheckConstraint(condition=Q(min_gold__gte=1), name="quality_rule_min_gold"),
        ]

    def __str__(self) -> str:
        return f"quality rule of stage {self.stage_id}"


class QualityAction(models.Model):
    """A pause (no more items of the stage) or a screen-out (a study participant's session
    ended, a rejection suggested), while ``undone_at`` is empty. ``by`` is empty for an
    automatic action; ``figures`` keeps what the decision read (gold answers, right ones, the
    interval) so the page can say why after the figures moved on."""

    class Kind(models.TextChoices):
        PAUSE = "pause", "Paused"
        SCREEN_OUT = "screen_out", "Screened out"

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    # PROTECT: work is never deleted with the people behind it (CONTRIBUTING.md).
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    kind = models.CharField(max_length=12, choices=Kind.choices)
    reason = models.CharField(max_length=300)
    figures = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withdrawn = models.PositiveIntegerField(
        default=0, help_text="Answers withdrawn (the engine's withdrawal rule)."
    )
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "annotator"],
                condition=Q(undone_at__isnull=True),
                name="quality_one_active_action",
            )
        ]
        indexes = [
            models.Index(
                fields=["project", "annotator"],
                condition=Q(undone_at__isnull=True),
                name="quality_active_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.annotator_id} on stage {self.stage_id}"

    @property
    def is_active(self) -> bool:
        return self.undone_at is None
