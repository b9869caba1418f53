"""Models in the loop: endpoints, versioned prompts, model raters, runs and the ledger of calls.

What lives where (llm/README.md has the map):

* :class:`Endpoint` — one model behind an OpenAI-compatible Chat Completions server. Its key is
  never stored: ``api_key_env`` names the environment variable that holds it (a secret store
  mounts secrets as environment variables), so no dump, fixture or release carries a key.
* :class:`PromptTemplate` / :class:`PromptVersion` — a prompt per project and task kind, and its
  immutable versions. A version renders from the item's allow-listed fields only (llm/prompts.py
  — the same allow-list annotators see); editing a template adds a version.
* :class:`ModelRater` — an (endpoint, prompt version) pair working in a stage as its own
  annotator identity (``user``), leased and submitted through the engine's own services.
* :class:`Run` — a job: a model rater working through a stage. Progress, pause, resume, cancel.
* :class:`Call` — the ledger: one row per (purpose, endpoint, prompt version, item, sample) key.
  A retried or re-run job finds the row and never calls or stores twice (llm/ledger.py).
* :class:`ModelVote` — what a model rater's annotation came from: the modal answer of its
  samples and their agreement (its confidence), for calibration against people.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

#: The base URL of the built-in demo responder (llm/demo_responder.py): not a language model.
DEMO_BASE_URL = "demo://responder/v1"


class Endpoint(models.Model):
    """A model served through the Chat Completions API (OpenAI, vLLM, Ollama, llama.cpp's
    server, LiteLLM, most hosted providers). ``base_url`` ends where ``/chat/completions``
    begins (``http://127.0.0.1:8001/v1``); ``DEMO_BASE_URL`` selects the demo responder."""

    name = models.SlugField(max_length=64, unique=True)
    base_url = models.CharField(max_length=500)
    model = models.CharField(max_length=200, help_text="The model id the server expects.")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the key (never the key itself).",
    )
    concurrency = models.PositiveSmallIntegerField(default=4, validators=[MinValueValidator(1)])
    requests_per_minute = models.PositiveIntegerField(default=60, help_text="0: no limit.")
    tokens_per_minute = models.PositiveIntegerField(default=0, help_text="0: no limit.")
    timeout_seconds = models.FloatField(default=60.0, validators=[MinValueValidator(0.1)])
    max_retries = models.PositiveSmallIntegerField(default=3)
    default_params = models.JSONField(
        default=dict, blank=True, help_text='e.g. {"temperature": 0, "max_tokens": 512, "seed": 1}'
    )
    json_schema_mode = models.BooleanField(
        default=True,
        help_text="Ask for a JSON schema (response_format json_schema); off: JSON mode only.",
    )
    price_prompt_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, default=Decimal(0)
    )
    price_completion_per_million = models.DecimalField(
        max_digits=12, decimal_places=4, default=Decimal(0)
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_demo(self) -> bool:
        return self.base_url.startswith("demo://")

    def cost(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        return (
            self.price_prompt_per_million * prompt_tokens
            + self.price_completion_per_million * completion_tokens
        ) / Decimal(1_000_000)


class PromptTemplate(models.Model):
    """A named prompt of a project for one task kind; its text lives in its versions."""

    class Purpose(models.TextChoices):
        RATE = "rate", "Rate (a model rater's answer)"
        GENERATE = "generate", "Generate (a revision or new items)"
        JUDGE = "judge", "Judge (rubric scores)"
        EVALUATE = "evaluate", "Evaluate (a release's questions)"

    project = models.ForeignKey(
        "annotation.Project", on_delete=models.CASCADE, related_name="prompt_templates"
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=64, help_text="The task kind whose answer it asks for.")
    purpose = models.CharField(max_length=16, choices=Purpose.choices, default=Purpose.RATE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="llm_template_name_unique")
        ]
        ordering = ["project_id", "name"]

    def __str__(self) -> str:
        return self.name

    def latest(self) -> PromptVersion | None:
        return self.versions.order_by("-number").first()


class PromptVersion(models.Model):
    """One immutable version of a template: Django template syntax over the item's allow-listed
    fields (``{{ cause }}``, ``{{ question }}``, ``{% for o in options %}``). Never edited: a
    change is a new version (llm.services.prompt_version_add). ``checksum`` covers the texts."""

    template = models.ForeignKey(PromptTemplate, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    system = models.TextField(blank=True)
    user = models.TextField()
    checksum = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["template", "number"], name="llm_version_unique")
        ]
        ordering = ["template_id", "number"]

    def __str__(self) -> str:
        return f"{self.template.name} v{self.number}"

    @staticmethod
    def checksum_of(system: str, user: str, kind: str) -> str:
        text = json.dumps([system, user, kind], ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()


class ModelRater(models.Model):
    """An (endpoint, prompt version) pair rating the items of a stage as its own annotator.

    ``user`` is the rater's identity in the engine (an inactive account with no password: it
    cannot log in). ``fills_human_slot`` False (the default): the model is an extra rater — the
    stage's overlap counts one more slot, reserved for it (llm/eligibility.py), so people give
    as many answers as before. ``samples`` > 1 asks the model that many times at
    ``temperature``; the modal answer is its vote and the samples' agreement its confidence."""

    stage = models.ForeignKey(
        "annotation.Stage", on_delete=models.CASCADE, related_name="model_raters"
    )
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="raters")
    prompt = models.ForeignKey(PromptVersion, on_delete=models.PROTECT, related_name="raters")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="model_rater"
    )
    samples = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    temperature = models.FloatField(null=True, blank=True)
    fills_human_slot = models.BooleanField(default=False)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["stage", "endpoint", "prompt"], name="llm_rater_unique_per_stage"
            )
        ]

    def __str__(self) -> str:
        return f"{self.endpoint.name} · {self.prompt}"


class Run(models.Model):
    """A job of model calls: a rater through its stage (``rater``), or an evaluation of a
    release (llm/evaluation). ``status`` is the control: a paused or cancelled run stops taking
    new items, a resumed one goes on where it was. For a rater run ``done`` / ``failed`` /
    ``total`` are the rater's progress through its stage (items answered / given up / all, over
    all its runs, recounted from the rows when a run is claimed), while ``calls`` and ``cost``
    are this run's own."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PAUSED = "paused", "Paused"
        CANCELLED = "cancelled", "Cancelled"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Purpose(models.TextChoices):
        RATE = "rate", "Model rater"
        GENERATE = "generate", "Generation"
        JUDGE = "judge", "Judges"
        EVALUATE = "evaluate", "Evaluation"

    project = models.ForeignKey("annotation.Project", on_delete=models.CASCADE, related_name="+")
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    rater = models.ForeignKey(
        ModelRater, null=True, blank=True, on_delete=models.CASCADE, related_name="runs"
    )
    #: A generation run's settings (llm/generation.py): the generator's key, the endpoint, the
    #: prompt version and the generator's cleaned options.
    generator = models.CharField(max_length=64, blank=True)
    endpoint = models.ForeignKey(
        Endpoint, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    prompt = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=Decimal(0))
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    def __str__(self) -> str:
        return f"run {self.pk} ({self.purpose}, {self.status})"


class Call(models.Model):
    """One model call, keyed: ``key`` (llm.ledger.call_key) is unique, so a call is made and
    stored once per (purpose, endpoint, prompt version, subject, sample). ``status`` pending:
    claimed by a worker (``claimed_until``); ok: ``parsed`` holds the answer that passed the
    kind's validation; failed: retries spent (``error`` says why) — never counted as a vote."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OK = "ok", "Answered"
        FAILED = "failed", "Failed"

    key = models.CharField(max_length=64, unique=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="calls")
    prompt = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="calls"
    )
    item = models.ForeignKey(
        "annotation.Item", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    subject = models.CharField(
        max_length=200, blank=True, help_text="What was asked about, when not an item."
    )
    sample = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    claimed_until = models.DateTimeField(null=True, blank=True)
    messages = models.JSONField(default=list)
    params = models.JSONField(default=dict)
    raw = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_kind = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # No index names ``status``, ``claimed_until`` or the answer's columns, and the table keeps
    # room on its pages (fillfactor, migration 0004): storing an answer (llm.ledger) is then a
    # HOT update, which writes none of the table's indexes. A run's calls are found by the
    # ``run`` foreign key's own index.

    def __str__(self) -> str:
        return f"call {self.key[:8]} ({self.status})"


class ModelVote(models.Model):
    """A model rater's answer on one item stage: ``value`` its vote (the kind's vote of the
    submitted payload), ``confidence`` the share of valid samples that gave it (1.0 with one
    sample), ``annotation`` the engine's row it was submitted as."""

    rater = models.ForeignKey(ModelRater, on_delete=models.CASCADE, related_name="votes")
    item_stage = models.ForeignKey(
        "annotation.ItemStage", on_delete=models.CASCADE, related_name="model_votes"
    )
    annotation = models.OneToOneField(
        "annotation.Annotation", on_delete=models.CASCADE, related_name="model_vote"
    )
    value = models.JSONField(null=True)
    confidence = models.FloatField()
    samples = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["rater", "item_stage"], name="llm_vote_unique")
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.item_stage_id}: {self.value!r} ({self.confidence:.2f})"


class Evaluation(models.Model):
    """One endpoint's answers to every question of a published release, scored by the
    workflow's scorer (llm/evaluation). Stored against the release's checksum
    (``release_sha256``, copied when it is created) and never changed once finished
    (``finished_at`` set): ``results`` (the model's figures) and ``baseline`` (the release's
    people, scored alike) are written once, together. Re-running a model adds an evaluation.
    The answers are the ledger's calls of ``run`` (``Call.subject`` = the question's id);
    progress, pause, resume and cancel are the run's."""

    class Mode(models.TextChoices):
        CHAT = "chat", "Answers (Chat Completions)"
        PERPLEXITY = "perplexity", "Perplexity of each option (prompt log-probabilities)"

    release = models.ForeignKey(
        "releases.Release", on_delete=models.PROTECT, related_name="evaluations"
    )
    release_sha256 = models.CharField(max_length=64)
    workflow = models.CharField(max_length=64)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.PROTECT, related_name="evaluations")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.CHAT)
    run = models.OneToOneField(Run, on_delete=models.PROTECT, related_name="evaluation")
    questions = models.PositiveIntegerField(default=0)
    answered = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=list, blank=True)
    baseline = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["release", "endpoint"], name="llm_eval_release_endpoint")]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of {self.release} by {self.endpoint.name}"
