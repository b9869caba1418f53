"""Data of ExpliCa-style ratings projects (CONTRIBUTING.md, "Models hold data and constraints": data and constraints only).

A ratings project is an engine Project (kind "ratings") plus:

- RatingsSetup: its connective set, label rule and the stages it uses (live rating, practice,
  historic). The rating scale lives in the stages' `config` (the engine validates against it).
- SentencePair: one imported pair of one-event sentences. Each pair becomes one engine Item per
  connective and sentence order (8 with ExpliCa's connectives), grouped by `Item.group` = pair id.
- ModelRun: one model's answers (1–10 ratings per item, or a chosen connective per ordered pair),
  uploaded to be compared with the human labels.

Ratings themselves are engine Annotations: live ones on the rating stage, imported historic ones
(assignment=None, external_rater) on the inactive historic stage; see services.py.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Project, Stage
from imports.models import ImportBatch


class RatingsSetup(models.Model):
    """How a ratings project renders, labels and collects its items."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="ratings_setup")
    connective_set = models.JSONField(
        help_text="ratings.connectives.ConnectiveSet.to_json(): connectives, their relation and "
        "order, and the text template."
    )
    label_rule = models.JSONField(
        default=dict, blank=True, help_text="ratings.stats.LabelRule fields; empty = ExpliCa's."
    )
    rating_stage = models.ForeignKey(
        Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    practice_stage = models.ForeignKey(
        Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    historic_stage = models.ForeignKey(
        Stage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"ratings setup of {self.project.slug}"


class SentencePair(models.Model):
    """One imported sentence pair (the unit ExpliCa labels, in each of its two orders)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sentence_pairs")
    pair_id = models.CharField(max_length=100)
    sentence_a = models.TextField()
    sentence_b = models.TextField()
    subset = models.CharField(
        max_length=50,
        blank=True,
        help_text="Expected relation, e.g. causal / temporal / unrelated.",
    )
    origin = models.CharField(max_length=100, blank=True)
    flags = models.JSONField(default=list, blank=True, help_text='e.g. ["socially challenging"]')
    extra = models.JSONField(default=dict, blank=True, help_text="Other columns of the import.")
    import_batch = models.ForeignKey(
        ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "pair_id"], name="sentence_pair_unique_id")
        ]
        indexes = [models.Index(fields=["project", "subset"])]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.pair_id}"


class ModelRun(models.Model):
    """A model's answers on a ratings project, for comparison with the human labels."""

    class AnswerKind(models.TextChoices):
        RATINGS = "ratings", "A rating per item"
        CHOICES = "choices", "A chosen connective per ordered pair"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="model_runs")
    name = models.CharField(max_length=200)
    answer_kind = models.CharField(max_length=10, choices=AnswerKind.choices)
    answers = models.JSONField(
        help_text="ratings: {item key: rating or null}; choices: {'pair_id|order': choice or null}."
    )
    n_answers = models.PositiveIntegerField(default=0)
    n_no_answer = models.PositiveIntegerField(default=0)
    filename = models.CharField(max_length=255, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="model_run_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.name}"


class StoredAnalysis(models.Model):
    """The researcher page's analysis of one source and model run, computed by a Celery task
    when the data change (ratings.services.analysis_refresh) and served from here, so that no
    page load computes it.

    ``version`` is ratings.selectors.data_version at the moment the computation read the data:
    the result is fresh while it equals the current one. ``content`` is the pickled
    ratings.selectors.Analysis (pandas frames and SVG strings; pickled, as Django's own cache
    backends store values, and only ever written by this app's task); ``page`` is its slim copy for
    the page. ``queued_at`` is set while
    a refresh is on its way (the debounce: one message per burst of changes)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=10)
    run = models.ForeignKey(ModelRun, null=True, blank=True, on_delete=models.CASCADE)
    #: The run's id or 0: a unique key that, unlike the nullable foreign key, treats "no run" as
    #: one value.
    run_key = models.PositiveBigIntegerField(default=0)
    version = models.CharField(max_length=40, blank=True)
    content = models.BinaryField(null=True, blank=True)
    #: The same analysis without the long tables only downloads read (ratings.selectors
    #: .PAGE_LEFT_OUT): what the page unpickles (None: stored before it existed; the page reads
    #: ``content``).
    page = models.BinaryField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    compute_seconds = models.FloatField(null=True, blank=True)
    #: How many times this selection was computed (the debounce keeps it far below the number of
    #: changes).
    computations = models.PositiveIntegerField(default=0)
    queued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "source", "run_key"], name="stored_analysis_unique_selection"
            )
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.source}/{self.run_key}"


class LiveStopping(models.Model):
    """Live stopping's state on one rating stage (ratings/stopping.py): the debounce of its
    task (``queued_at``, rungwise/debounce.py: set while a run is on its way) and where the next
    run reads from (``read_from``: ratings stored from then on, less a minute's margin; None:
    every rating, as on the first run)."""

    stage = models.OneToOneField(Stage, on_delete=models.CASCADE, related_name="+")
    queued_at = models.DateTimeField(null=True, blank=True)
    read_from = models.DateTimeField(null=True, blank=True)
    runs = models.PositiveIntegerField(default=0)
    last_run_at = models.DateTimeField(null=True, blank=True)
    #: Item stages the last run stopped.
    last_stopped = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"live stopping of stage {self.stage_id}"


class StoredRatingsCounts(models.Model):
    """A large ratings project's counts that only its imports change (pairs, items by purpose,
    the historic stage's item stages, ratings and raters), stored by a Celery task and served
    with their age (ratings/stored_counts.py). One row per project; written by the task only
    (and its debounce mark, ``queued_at``, by ``rungwise/debounce.py``)."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    #: ratings.stored_counts.ProjectCounts as a dict.
    counts = models.JSONField(default=dict, blank=True)
    #: The project's items and historic ratings when counted (whether the project is large).
    total = models.PositiveBigIntegerField(default=0)
    stored_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"stored ratings counts of project {self.project_id} ({self.stored_at})"
