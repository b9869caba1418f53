"""Model generation: a run (purpose ``generate``) in which a model writes, per seed item, what
a workflow's people would otherwise import by hand — new items with lineage to their seed —
and sends it to the workflow's next human stage (llm/README.md, "Generation and judges").

**Generators are plug-ins.** A workflow declares what a model may write for it as
:class:`ModelGenerator` objects in its ``Plugin.model_generators`` (annotation/plugins.py); the
llm app applies that field (``extension_point`` in llm/apps.py) into :data:`GENERATORS`. A
generator says:

* ``seeds(project, options)``: the items to write from, each a :class:`Seed` whose ``fields``
  are what the prompt may use — a stage's allow-list (``llm.prompts.item_fields``: what that
  stage's annotators see) plus the generator's own parameters (a target domain), never more;
* ``answer_schema(project, options)``: the JSON schema of the model's answer;
* ``check(answer, seed)``: the answer cleaned, or ``CallError("unparseable", …)`` — retried by
  the endpoint's policy, then reported on the run, never written;
* ``write(project, seed, answer, provenance)``: writes through the workflow's own code path
  (METER: its entries import; CausalT5k: items created and opened like imported cases) and
  returns a :class:`Written`. ``provenance`` — endpoint, model, prompt version, parameters,
  the call's ledger key, the run — is stored on everything written (payload ``generated_by``).

**A run** (:func:`generation_run`, Celery task ``llm.tasks.generation_run``) is claimed like a
rater's run (llm.runs.claim: one worker, taken over when its heartbeat stops), then per seed:
the call through the ledger (one stored call per (generator, endpoint, prompt version, seed,
sample) key — a re-run never calls twice), and the write, skipped when something written under
that key already exists (``generated_by.call``) — so a killed worker's seed is neither lost nor
written twice. Between seeds it reads its status (pause, resume, cancel: llm.services.run_control).

**Where a run's settings live.** On the run: ``Run.generator``, ``endpoint``, ``prompt`` and
``options`` (:func:`run_settings` reads them).

Drafting a **revision** of an item is not a generator: it is a model rater on a stage whose
kind's answer becomes the item's revision (CausalT5k's pressure variants: ``ct5k_pressure``
declares ``answer_schema``; the stage's policy makes the variants the revision and routes them to
the people who check them).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation.api import enqueue_on_commit
from annotation.errors import ApplicationError, Conflict
from annotation.models import Item, Project
from llm import prompts
from llm.client import CallError
from llm.ledger import call_key, call_once
from llm.models import Call, Endpoint, PromptTemplate, PromptVersion, Run
from llm.runs import claim, run_finished_announce

logger = logging.getLogger(__name__)

#: The project settings key holding each generation run's settings (module docstring).
#: The parameters a run may set on its calls.
PARAMS = ("temperature", "max_tokens", "seed", "top_p")


@dataclass
class Seed:
    """One unit of generation: the item written from, the prompt's fields, and the ledger
    subject naming it (unique per generator and seed, e.g. ``ct5k_expansion:41:D4``)."""

    item: Item
    fields: dict[str, Any]
    subject: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Written:
    """What a write did: ``created`` items; ``held`` answers not written and why (a quota)."""

    created: int = 0
    held: int = 0
    note: str = ""


class ModelGenerator:
    """Base class of a workflow's generator (module docstring): set the class attributes and
    implement the four methods. ``kind`` is the task kind of the stage its output goes to;
    a generation prompt (purpose ``generate``) is written for that kind."""

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""
    workflow: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    #: The options ``generation_start`` accepts besides the call parameters (PARAMS).
    option_names: ClassVar[tuple[str, ...]] = ()

    def clean_options(self, project: Project, options: Mapping[str, Any]) -> dict[str, Any]:
        """The options cleaned; ApplicationError naming the bad one."""
        unknown = sorted(set(options) - set(self.option_names) - set(PARAMS))
        if unknown:
            raise ApplicationError(
                f"Unknown option(s) {', '.join(unknown)} for {self.key}.", {"options": unknown[0]}
            )
        return dict(options)

    def form_options(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The generator's options from a posted form (strings); ``clean_options`` checks them.
        Default: none."""
        return {}

    def seeds(self, project: Project, options: Mapping[str, Any]) -> Iterable[Seed]:
        raise NotImplementedError

    def answer_schema(self, project: Project, options: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def check(self, answer: dict[str, Any], seed: Seed) -> dict[str, Any]:
        raise NotImplementedError

    def write(
        self, *, project: Project, seed: Seed, answer: dict[str, Any], provenance: dict[str, Any]
    ) -> Written:
        raise NotImplementedError


GENERATORS: dict[str, ModelGenerator] = {}


def register_generator(generator: ModelGenerator) -> ModelGenerator:
    """The ``model_generators`` extension point's ``register`` (llm/apps.py)."""
    if not generator.key or not generator.workflow:
        raise ValueError("a model generator needs a key and a workflow")
    GENERATORS[generator.key] = generator
    return generator


def get_generator(key: str) -> ModelGenerator:
    try:
        return GENERATORS[key]
    except KeyError:
        raise ApplicationError(
            f"Unknown generator {key!r}; registered: {', '.join(sorted(GENERATORS)) or 'none'}.",
            {"generator": key},
        ) from None


def generators_for(project: Project) -> list[ModelGenerator]:
    """The generators of the project's workflow, by key."""
    return sorted(
        (g for g in GENERATORS.values() if g.workflow == project.kind), key=lambda g: g.key
    )


# --- Set-up -------------------------------------------------------------------------------


def run_settings(run: Run) -> dict[str, Any]:
    """The generation run's settings: generator, endpoint, prompt (version ids), options."""
    if not run.generator:
        raise ApplicationError(f"Run {run.pk} has no generation settings.", {"run": run.pk})
    return {
        "generator": run.generator,
        "endpoint": run.endpoint_id,
        "prompt": run.prompt_id,
        "options": dict(run.options or {}),
    }


@transaction.atomic
def generation_start(
    *,
    project: Project,
    generator: str,
    endpoint: Endpoint,
    prompt: PromptVersion,
    options: Mapping[str, Any] | None = None,
    by: User | None = None,
) -> Run:
    """A generation run of ``generator`` on the project, sent to the workers after commit.
    Refused: a generator of another workflow, a prompt of another project, purpose or kind,
    a bad option, a second live run of the same generator."""
    found = get_generator(generator)
    if found.workflow != project.kind:
        raise ApplicationError(
            f"{found.key} writes for {found.workflow} projects; this one is {project.kind}.",
            {"generator": found.key},
        )
    template = prompt.template
    if template.project_id != project.pk:
        raise ApplicationError("The prompt belongs to another project.", {"prompt": prompt.pk})
    if template.purpose != PromptTemplate.Purpose.GENERATE or template.kind != found.kind:
        raise ApplicationError(
            f"{found.key} needs a generation prompt for {found.kind!r} (got a "
            f"{template.purpose} prompt for {template.kind!r}).",
            {"prompt": template.name},
        )
    clean = found.clean_options(project, dict(options or {}))
    # The project's row lock serialises two starts of one generator (the check, then the row).
    Project.objects.select_for_update().only("pk").get(pk=project.pk)
    live = Run.objects.filter(
        project=project,
        purpose=Run.Purpose.GENERATE,
        generator=found.key,
        status__in=[*Run.ACTIVE, Run.Status.PAUSED],
    )
    if live.exists():
        raise Conflict(f"{found.label} already has a run in progress or paused: resume it.")
    run = Run.objects.create(
        project=project,
        purpose=Run.Purpose.GENERATE,
        created_by=by,
        generator=found.key,
        endpoint=endpoint,
        prompt=prompt,
        options=clean,
    )
    send(run)
    return run


def send(run: Run) -> None:
    from llm.tasks import generation_run as task

    enqueue_on_commit(task, run.pk)


def generation_form(project: Project, generator: str) -> dict[str, Any]:
    """What a workflow tab's "Generate with a model" form offers: the generator, the endpoints,
    the latest version of each of the project's generation prompts for its kind, and its last
    runs (newest first)."""
    found = get_generator(generator)
    templates = PromptTemplate.objects.filter(
        project=project, purpose=PromptTemplate.Purpose.GENERATE, kind=found.kind
    ).order_by("name")
    prompts_offered = [v for v in (t.latest() for t in templates) if v is not None]
    ids = list(
        Run.objects.filter(project=project, generator=found.key).values_list("pk", flat=True)
    )
    return {
        "generator": found,
        "endpoints": list(Endpoint.objects.order_by("name")),
        "prompts": prompts_offered,
        "runs": list(Run.objects.filter(pk__in=ids).order_by("-created_at")[:5]),
    }


def _form_int(data: Mapping[str, Any], name: str) -> int:
    raw = str(data.get(name) or "").strip()
    if not raw.isdigit():
        raise ApplicationError(f"Choose the {name}.", {name: "required"})
    return int(raw)


def generation_start_from_form(
    *, project: Project, generator: str, data: Mapping[str, Any], by: User | None = None
) -> Run:
    """``generation_start`` from a posted form: ``endpoint`` and ``prompt`` (ids), an optional
    ``temperature``, and the generator's own fields (``ModelGenerator.form_options``)."""
    found = get_generator(generator)
    try:
        endpoint = Endpoint.objects.get(pk=_form_int(data, "endpoint"))
        prompt = PromptVersion.objects.select_related("template").get(
            pk=_form_int(data, "prompt"), template__project=project
        )
    except (Endpoint.DoesNotExist, PromptVersion.DoesNotExist):
        raise ApplicationError("No such endpoint or prompt.", {"prompt": "unknown"}) from None
    options = found.form_options(data)
    raw = str(data.get("temperature") or "").strip()
    if raw:
        try:
            options["temperature"] = float(raw)
        except ValueError:
            raise ApplicationError(
                f"The temperature is a number (got {raw[:20]!r}).", {"temperature": raw[:20]}
            ) from None
    return generation_start(
        project=project,
        generator=found.key,
        endpoint=endpoint,
        prompt=prompt,
        options=options,
        by=by,
    )


# --- The run --------------------------------------------------------------------------------


def _params(options: Mapping[str, Any]) -> dict[str, Any]:
    return {name: options[name] for name in PARAMS if options.get(name) is not None}


def provenance_of(call: Call, endpoint: Endpoint, prompt: PromptVersion, run: Run) -> dict:
    """What is recorded on everything a call's answer wrote (payload ``generated_by``)."""
    return {
        "endpoint": endpoint.name,
        "model": endpoint.model,
        "prompt": f"{prompt.template.name} v{prompt.number}",
        "prompt_version": prompt.pk,
        "params": dict(call.params or {}),
        "call": call.key,
        "run": run.pk,
    }


def already_written(project: Project, key: str) -> bool:
    return Item.objects.filter(project=project, payload__generated_by__call=key).exists()


def generate_one(
    *,
    generator: ModelGenerator,
    project: Project,
    seed: Seed,
    endpoint: Endpoint,
    prompt: PromptVersion,
    options: Mapping[str, Any],
    run: Run,
) -> tuple[Call, Written | None]:
    """One seed: the call through the ledger, then the write (None: the call failed)."""
    schema = generator.answer_schema(project, options)
    key = call_key("generate", endpoint, prompt, f"{generator.key}:{seed.subject}", 0)
    messages = prompts.render(
        prompt, seed.fields, schema=schema, json_schema_mode=endpoint.json_schema_mode
    )
    call = call_once(
        key=key,
        endpoint=endpoint,
        messages=messages,
        parse=lambda text: generator.check(prompts.parse_json(text), seed),
        response_format=prompts.answer_format(schema, endpoint),
        params=_params(options),
        run=run,
        prompt=prompt,
        item_id=seed.item.pk,
        subject=f"{generator.key}:{seed.subject}",
    )
    if call.status != Call.Status.OK:
        return call, None
    if already_written(project, key):
        return call, Written(note="written before")
    answer: dict[str, Any] = dict(call.parsed or {})
    return call, generator.write(
        project=project,
        seed=seed,
        answer=answer,
        provenance=provenance_of(call, endpoint, prompt, run),
    )


def _beat(run: Run) -> bool:
    """Beat the run's heartbeat; False when it is no longer running (paused or cancelled)."""
    return bool(
        Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=timezone.now())
    )


def generation_run(run_id: int) -> Run | None:
    """Work the run (module docstring); returns it as it ended, or None when not claimed."""
    run = claim(run_id)
    if run is None or run.purpose != Run.Purpose.GENERATE:
        return run
    try:
        settings = run_settings(run)
        generator = get_generator(settings["generator"])
        endpoint = Endpoint.objects.get(pk=settings["endpoint"])
        prompt = PromptVersion.objects.select_related("template").get(pk=settings["prompt"])
    except (ApplicationError, Endpoint.DoesNotExist, PromptVersion.DoesNotExist) as error:
        Run.objects.filter(pk=run.pk).update(
            status=Run.Status.FAILED, error=str(error)[:2000], finished_at=timezone.now()
        )
        run.refresh_from_db()
        return run
    project = Project.objects.get(pk=run.project_id)
    options = settings.get("options") or {}
    seeds = list(generator.seeds(project, options))
    Run.objects.filter(pk=run.pk).update(total=len(seeds), done=0, failed=0)
    notes: list[str] = []
    for seed in seeds:
        if not _beat(run):
            break
        try:
            call, written = generate_one(
                generator=generator,
                project=project,
                seed=seed,
                endpoint=endpoint,
                prompt=prompt,
                options=options,
                run=run,
            )
        except ApplicationError as error:  # the workflow refused what the model wrote
            notes.append(f"{seed.subject}: {error}")
            Run.objects.filter(pk=run.pk).update(failed=F("failed") + 1)
            continue
        if written is None:
            notes.append(f"{seed.subject}: {call.error_kind}: {call.error}"[:300])
            Run.objects.filter(pk=run.pk).update(failed=F("failed") + 1)
            continue
        if written.held:
            notes.append(f"{seed.subject}: {written.held} held back ({written.note})"[:300])
        Run.objects.filter(pk=run.pk).update(done=F("done") + 1)
    Run.objects.filter(pk=run.pk).update(error="\n".join(notes)[:20000])
    finished = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(
        status=Run.Status.DONE, finished_at=timezone.now()
    )
    run.refresh_from_db()
    if finished:
        run_finished_announce(run)
    return run


def check_failed(message: str) -> CallError:
    """The error a generator's ``check`` raises: retried, then reported, never written."""
    return CallError("unparseable", f"the answer does not pass the workflow's check: {message}")
