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


# --- Annotator models (agreement/aggregation) -----------------------------------------------------


class AggregationFit(models.Model):
    """The latest fit of one annotator model (Dawid–Skene, MACE or GLAD:
    agreement/aggregation/estimators.py) to a stage's categorical votes: the rater parameters a
    new item's posterior needs, and each rater's reliability with its bootstrap interval. One
    row per stage and model, replaced by each fit (agreement/aggregation/services.py)."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="aggregation_fits")
    model = models.CharField(max_length=20)
    #: The stage's categories, in the order of the posteriors' and parameters' columns.
    categories = models.JSONField(default=list)
    #: Rater keys (agreement.votes' keys: user ids, negative for external raters), in the
    #: order of ``params``' rows.
    raters = models.JSONField(default=list)
    #: The estimator's parameters (``Fit.params``).
    params = models.JSONField(default=dict)
    #: Per rater, in the order of ``raters``: [reliability, interval low, interval high, votes].
    reliability = models.JSONField(default=list)
    n_items = models.PositiveIntegerField(default=0)
    n_annotations = models.PositiveIntegerField(default=0)
    bootstrap_replicates = models.PositiveIntegerField(default=0)
    seed = models.IntegerField(default=0)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stage", "model"], name="aggregation_fit_stage_model")
        ]

    def __str__(self) -> str:
        return f"{self.model} of stage {self.stage_id}"


class ItemPosterior(models.Model):
    """The posterior of every label of one item stage under one fit (``posterior[i]`` is the
    probability of ``fit.categories[i]``), its most probable label, and the plurality label of
    the votes (None on a tie), so pages can list where the two differ."""

    fit = models.ForeignKey(AggregationFit, on_delete=models.CASCADE, related_name="posteriors")
    item_stage = models.ForeignKey(
        "annotation.ItemStage", on_delete=models.CASCADE, related_name="+"
    )
    posterior = models.JSONField(default=list)
    label = models.JSONField(null=True)
    probability = models.FloatField()
    majority = models.JSONField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fit", "item_stage"], name="item_posterior_fit_item_stage"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item_stage_id}: {self.label!r} ({self.probability:.2f})"


class StoredStagePage(models.Model):
    """What a large stage's pages show that is too slow to count on every request: its items by
    state, its annotations and annotators, its resolved values and the progress series, stored
    with the stage's own figures (``StoredStageFigure``) by a Celery task (``agreement.stored``)
    and served with their age. One row per stage; written by the task only (and its debounce mark,
    ``queued_at``, by ``rungwise/debounce.py``)."""

    stage = models.OneToOneField(
        Stage, on_delete=models.CASCADE, primary_key=True, related_name="stored_page"
    )
    #: ``agreement.selectors.StageProgress``'s stored fields, and ``resolved``: {JSON of a
    #: resolved value: items}.
    counts = models.JSONField(default=dict, blank=True)
    #: ``agreement.selectors.ProgressSeries`` as JSON (bucket starts as ISO 8601 text).
    progress = models.JSONField(default=dict, blank=True)
    stored_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"stored page of stage {self.stage_id} ({self.stored_at})"


class StoredStageFigure(models.Model):
    """One of a stage's own figures (``agreement.figures.PLOTS``) as drawn by the task that
    stores ``StoredStagePage``: served instead of drawing it on each request."""

    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=40)
    svg = models.TextField()
    stored_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stage", "name"], name="stored_stage_figure_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} of stage {self.stage_id} ({self.stored_at})"
