"""Read-only selectors of the models' pages (CONTRIBUTING.md, "Thin views"): endpoints and
whether their keys are set, the Models tab's rows, a run's progress, failures and calls, the
cost estimate of a run before it starts. Nothing here writes to the database.

:func:`endpoint_ping` is the one exception to "reads the database": it sends one tiny request
to the endpoint's server (through ``llm.client.chat``, the production client) and writes
nothing — neither the ledger nor a run — so testing an endpoint leaves no trace but the
server's own log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.db.models import Avg, Count, QuerySet

from annotation.models import Assignment, Item, ItemStage, Project, Stage
from llm import prompts
from llm.client import CallError, Reply, chat
from llm.client import api_key as endpoint_key
from llm.models import Call, Endpoint, ModelRater, PromptTemplate, PromptVersion, Run

#: Preview items: the default and the most one preview renders (each may call the model).
PREVIEW_ITEMS_DEFAULT = 3
PREVIEW_ITEMS_MAX = 10
#: Completion tokens assumed per call when neither earlier calls nor ``max_tokens`` say more.
COMPLETION_TOKENS_GUESS = 50
#: The message of the endpoint test: as short as a request can be.
PING_MESSAGES = [{"role": "user", "content": "Reply with the word OK."}]


# --- Endpoints --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndpointRow:
    endpoint: Endpoint
    #: None: the endpoint names no variable (local servers take any key); else whether the
    #: variable is set on this server. Never the value.
    key_set: bool | None
    raters: int


def key_set(endpoint: Endpoint) -> bool | None:
    """Whether the endpoint's key variable is set here (None when it names none)."""
    if not endpoint.api_key_env:
        return None
    try:
        endpoint_key(endpoint)
    except CallError:
        return False
    return True


def endpoint_rows() -> list[EndpointRow]:
    endpoints = Endpoint.objects.annotate(rater_count=Count("raters")).order_by("name")
    return [
        EndpointRow(endpoint=e, key_set=key_set(e), raters=getattr(e, "rater_count", 0))
        for e in endpoints
    ]


@dataclass(frozen=True)
class PingResult:
    ok: bool
    text: str = ""
    model: str = ""
    latency_ms: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error_kind: str = ""
    error: str = ""


def endpoint_ping(endpoint: Endpoint) -> PingResult:
    """One tiny request to ``endpoint`` (module docstring): its reply, or the error's kind and
    message (llm/client.py names the kinds)."""
    try:
        reply: Reply = chat(endpoint, PING_MESSAGES, params={"max_tokens": 8})
    except CallError as error:
        return PingResult(ok=False, error_kind=error.kind, error=error.message)
    return PingResult(
        ok=True,
        text=reply.text[:500],
        model=reply.model,
        latency_ms=reply.latency_ms,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
    )


# --- The Models tab ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CostEstimate:
    """What a run of a rater would cost: ``pending`` items x ``samples`` calls, each of about
    ``prompt_tokens`` + ``completion_tokens`` at the endpoint's prices. ``basis`` says where
    the token figures come from (earlier calls, or the rendered prompt and ``max_tokens``)."""

    pending: int
    samples: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal
    basis: str


def _pending(rater: ModelRater) -> QuerySet[ItemStage]:
    """The open item stages of the rater's stage it has not answered nor given up (the set
    llm.runs works through)."""
    finished = Assignment.objects.filter(
        annotator=rater.user_id,
        stage=rater.stage_id,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED],
    ).values("item_stage_id")
    return ItemStage.objects.filter(stage=rater.stage_id, state=ItemStage.State.OPEN).exclude(
        pk__in=finished
    )


def cost_estimate(rater: ModelRater) -> CostEstimate:
    """The cost of running ``rater`` now (see CostEstimate). Tokens per call: the averages of
    the answered calls of this endpoint and prompt version when there are any; otherwise the
    rendered prompt of up to three pending items at four characters a token, and the
    endpoint's ``max_tokens`` (an upper bound) or ``COMPLETION_TOKENS_GUESS``."""
    pending = _pending(rater)
    count = pending.count()
    endpoint = rater.endpoint
    seen = Call.objects.filter(
        endpoint=endpoint, prompt=rater.prompt_id, status=Call.Status.OK
    ).aggregate(prompt=Avg("prompt_tokens"), completion=Avg("completion_tokens"))
    if seen["prompt"] is not None:
        prompt_tokens, completion_tokens = round(seen["prompt"]), round(seen["completion"] or 0)
        basis = "the average of this prompt's earlier calls on this endpoint"
    else:
        stage = rater.stage
        schema = prompts.answer_schema(stage)
        sizes = []
        for item_stage in pending.select_related("item").order_by("pk")[:3]:
            messages = prompts.render(
                rater.prompt,
                prompts.item_fields(item_stage.item, stage),
                schema=schema,
                json_schema_mode=endpoint.json_schema_mode,
            )
            sizes.append(sum(len(m["content"]) for m in messages) // 4)
        prompt_tokens = round(sum(sizes) / len(sizes)) if sizes else 0
        params = endpoint.default_params or {}
        limit = params.get("max_tokens") or params.get("max_completion_tokens")
        completion_tokens = int(limit) if limit else COMPLETION_TOKENS_GUESS
        basis = "the rendered prompt (4 characters a token) and " + (
            "max_tokens, an upper bound" if limit else "a guess of the answer's length"
        )
    calls = count * rater.samples
    return CostEstimate(
        pending=count,
        samples=rater.samples,
        calls=calls,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        cost=endpoint.cost(prompt_tokens * calls, completion_tokens * calls),
        basis=basis,
    )


@dataclass(frozen=True)
class RaterRow:
    rater: ModelRater
    estimate: CostEstimate | None
    last_run: Run | None

    @property
    def live_run(self) -> Run | None:
        """The run to resume or watch instead of starting one (queued, running or paused)."""
        live = (*Run.ACTIVE, Run.Status.PAUSED)
        return self.last_run if self.last_run and self.last_run.status in live else None


@dataclass(frozen=True)
class StageRow:
    stage: Stage
    raters: list[RaterRow]
    #: The prompt versions of templates asking for this stage's kind (for the add form).
    versions: list[PromptVersion]
    #: Whether the kind has a structured answer a model can give.
    model_ready: bool


@dataclass(frozen=True)
class TemplateRow:
    template: PromptTemplate
    versions: list[PromptVersion]
    stages: list[Stage] = field(default_factory=list)


@dataclass(frozen=True)
class ModelsTab:
    stages: list[StageRow]
    templates: list[TemplateRow]
    runs: list[Run]
    endpoints: list[Endpoint]


def project_stages(project: Project) -> list[Stage]:
    return list(Stage.objects.filter(project=project).order_by("position", "pk"))


def models_tab(project: Project, *, estimates: bool = True) -> ModelsTab:
    """Everything the Models tab lists; ``estimates`` off skips the cost estimates (the
    researchers' read-only view has no Start buttons to weigh)."""
    stages = project_stages(project)
    templates = list(
        PromptTemplate.objects.filter(project=project).prefetch_related("versions").order_by("name")
    )
    template_rows = [
        TemplateRow(
            template=t,
            versions=sorted(t.versions.all(), key=lambda v: -v.number),
            stages=[s for s in stages if s.kind == t.kind],
        )
        for t in templates
    ]
    raters = list(
        ModelRater.objects.filter(stage__project=project)
        .select_related("stage", "endpoint", "prompt__template", "user")
        .order_by("-active", "pk")
    )
    last_runs: dict[int, Run] = {}
    for run in Run.objects.filter(rater__in=raters).order_by("-created_at", "-pk"):
        if run.rater_id is not None:
            last_runs.setdefault(run.rater_id, run)
    rows = []
    for stage in stages:
        rows.append(
            StageRow(
                stage=stage,
                raters=[
                    RaterRow(
                        rater=r,
                        estimate=cost_estimate(r) if estimates and r.active else None,
                        last_run=last_runs.get(r.pk),
                    )
                    for r in raters
                    if r.stage_id == stage.pk
                ],
                versions=[
                    v
                    for row in template_rows
                    if row.template.kind == stage.kind
                    for v in row.versions
                ],
                model_ready=prompts.answer_schema(stage) is not None,
            )
        )
    runs = list(
        Run.objects.filter(project=project)
        .select_related(
            "rater__stage",
            "rater__endpoint",
            "rater__prompt__template",
            "endpoint",
            "prompt__template",
        )
        .order_by("-created_at", "-pk")[:20]
    )
    return ModelsTab(
        stages=rows, templates=template_rows, runs=runs, endpoints=list(Endpoint.objects.all())
    )


def template_versions(template: PromptTemplate) -> list[PromptVersion]:
    return list(template.versions.select_related("created_by").order_by("-number"))


def preview_item_ids(stage: Stage, count: int) -> list[int]:
    """``count`` real items for a preview of ``stage``: its open items first, then its others,
    then (a stage no item reached yet) the project's first items."""
    in_stage = ItemStage.objects.filter(stage=stage).order_by("pk")
    open_first = list(
        in_stage.filter(state=ItemStage.State.OPEN).values_list("item_id", flat=True)[:count]
    )
    others = list(in_stage.values_list("item_id", flat=True)[:count])
    chosen = list(dict.fromkeys([*open_first, *others]))[:count]
    if not chosen:
        chosen = list(
            Item.objects.filter(project_id=stage.project_id)
            .order_by("pk")
            .values_list("pk", flat=True)[:count]
        )
    return chosen


# --- Runs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunProgress:
    run: Run
    done: int
    failed: int
    total: int
    calls: int
    cost: Decimal
    percent: float | None
    finished: bool

    @property
    def can_pause(self) -> bool:
        return self.run.status in Run.ACTIVE

    @property
    def can_resume(self) -> bool:
        return self.run.status == Run.Status.PAUSED

    @property
    def can_cancel(self) -> bool:
        return self.run.status in (*Run.ACTIVE, Run.Status.PAUSED)


def run_progress(run: Run) -> RunProgress:
    """A run's counters as its progress bar shows them; ``percent`` None until the run has
    counted its items."""
    finished = run.status in (Run.Status.DONE, Run.Status.CANCELLED, Run.Status.FAILED)
    settled = run.done + run.failed
    percent = None
    if run.total:
        percent = min(100.0, 100.0 * settled / run.total)
    elif finished:
        percent = 100.0
    return RunProgress(
        run=run,
        done=run.done,
        failed=run.failed,
        total=run.total,
        calls=run.calls,
        cost=run.cost,
        percent=percent,
        finished=finished,
    )


@dataclass(frozen=True)
class FailedItem:
    item_id: int | None
    external_id: str
    error_kind: str
    error: str


def run_failures(run: Run) -> list[FailedItem]:
    """The items the run's calls failed on, one row each (its last failed call's error)."""
    calls = (
        Call.objects.filter(run=run, status=Call.Status.FAILED)
        .select_related("item")
        .order_by("item_id", "-finished_at", "-pk")
    )
    rows: dict[Any, FailedItem] = {}
    for call in calls:
        key = call.item_id if call.item_id is not None else call.subject
        if key in rows:
            continue
        rows[key] = FailedItem(
            item_id=call.item_id,
            external_id=call.item.external_id if call.item else call.subject,
            error_kind=call.error_kind,
            error=call.error,
        )
    return list(rows.values())


def run_calls(run: Run) -> QuerySet[Call]:
    """The run's calls in the order they were made (page them with annotation.web.page_of)."""
    return Call.objects.filter(run=run).select_related("item").order_by("pk")


CALLS_CSV_HEADER: Sequence[str] = (
    "call",
    "item",
    "sample",
    "status",
    "attempts",
    "prompt_tokens",
    "completion_tokens",
    "latency_ms",
    "cost",
    "error_kind",
    "error",
    "raw",
    "parsed",
    "finished_at",
)


def run_calls_csv(run: Run) -> Iterator[list[Any]]:
    """The rows of the run's calls download (``CALLS_CSV_HEADER``), read one at a time."""
    import json

    for call in run_calls(run).iterator(chunk_size=500):
        yield [
            call.pk,
            call.item.external_id if call.item else call.subject,
            call.sample,
            call.status,
            call.attempts,
            call.prompt_tokens,
            call.completion_tokens,
            call.latency_ms,
            str(call.cost),
            call.error_kind,
            call.error,
            call.raw,
            "" if call.parsed is None else json.dumps(call.parsed, ensure_ascii=False),
            call.finished_at,
        ]
