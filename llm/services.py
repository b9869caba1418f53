"""Write services of the llm app (each owns its transaction; CONTRIBUTING.md, "Services"):
endpoints, prompt templates and versions, model raters in stages, runs and their control.

Contracts worth knowing before calling:

* :func:`prompt_version_add` never edits a version: a text that differs from the latest makes
  the next version; the same text returns the latest.
* :func:`rater_add` gives the rater its own annotator identity (an inactive account that
  cannot log in, an annotator membership) and, for an extra rater (the default), one more slot
  per item kept for it (``annotation.api.stage_slots_add`` and the ``model_slots`` eligibility
  rule, llm/eligibility.py). :func:`rater_remove` undoes the slot and keeps every answer given.
* :func:`run_start` refuses a second live run of one rater; :func:`run_control` pauses,
  resumes or cancels (a finished run cannot be resumed: start a new one, which skips the
  items already answered and calls nothing twice).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.api import enqueue_on_commit, membership_add, stage_slots_add, stage_update
from annotation.errors import ApplicationError, Conflict
from annotation.kinds.base import get_kind
from annotation.models import Project, Role, Stage
from llm import prompts
from llm.models import DEMO_BASE_URL, Endpoint, ModelRater, PromptTemplate, PromptVersion, Run

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
MAX_SAMPLES = 20


def endpoint_check(endpoint: Endpoint) -> None:
    """ApplicationError naming the field when an endpoint's settings cannot work."""
    if not endpoint.base_url.startswith(("http://", "https://")) and (
        endpoint.base_url != DEMO_BASE_URL
    ):
        raise ApplicationError(
            f"The base URL must start with http:// or https:// (got {endpoint.base_url!r}).",
            {"base_url": "http(s)://host:port/v1"},
        )
    if endpoint.api_key_env and not ENV_NAME.match(endpoint.api_key_env):
        raise ApplicationError(
            "Name the environment variable that holds the key (e.g. OPENAI_API_KEY), not the "
            "key itself: capitals, digits and _.",
            {"api_key_env": "an environment variable's name"},
        )
    if not isinstance(endpoint.default_params, dict):
        raise ApplicationError(
            "Default parameters must be a JSON object.", {"default_params": "expected {}"}
        )
    allowed = {"temperature", "max_tokens", "max_completion_tokens", "seed", "top_p", "stop"}
    unknown = sorted(set(endpoint.default_params) - allowed)
    if unknown:
        raise ApplicationError(
            f"Unknown default parameter(s): {', '.join(unknown)}; allowed: "
            f"{', '.join(sorted(allowed))}.",
            {"default_params": unknown[0]},
        )


@transaction.atomic
def endpoint_save(*, endpoint: Endpoint) -> Endpoint:
    endpoint_check(endpoint)
    endpoint.full_clean()
    endpoint.save()
    return endpoint


@transaction.atomic
def prompt_template_create(
    *,
    project: Project,
    name: str,
    kind: str,
    user_text: str,
    system_text: str = "",
    purpose: str = PromptTemplate.Purpose.RATE,
    by: User | None = None,
) -> PromptVersion:
    """A new template with its version 1."""
    get_kind(kind)  # KeyError → the caller's form says "unknown kind"
    if PromptTemplate.objects.filter(project=project, name=name).exists():
        raise Conflict(f"This project already has a prompt named {name!r}.")
    template = PromptTemplate.objects.create(project=project, name=name, kind=kind, purpose=purpose)
    return prompt_version_add(
        template=template, user_text=user_text, system_text=system_text, by=by
    )


@transaction.atomic
def prompt_version_add(
    *, template: PromptTemplate, user_text: str, system_text: str = "", by: User | None = None
) -> PromptVersion:
    """The template's next version, or its latest when the texts are the same."""
    if not user_text.strip():
        raise ApplicationError("The prompt needs a user message.", {"user": "required"})
    prompts.template_check(system_text)
    prompts.template_check(user_text)
    locked = PromptTemplate.objects.select_for_update().get(pk=template.pk)
    checksum = PromptVersion.checksum_of(system_text, user_text, locked.kind)
    latest = locked.latest()
    if latest is not None and latest.checksum == checksum:
        return latest
    return PromptVersion.objects.create(
        template=locked,
        number=(latest.number + 1) if latest else 1,
        system=system_text,
        user=user_text,
        checksum=checksum,
        created_by=by,
    )


def _rater_username(stage: Stage, endpoint: Endpoint, prompt: PromptVersion) -> str:
    return f"model:{endpoint.name}:{prompt.template.name}:v{prompt.number}:s{stage.pk}"[:150]


@transaction.atomic
def rater_add(
    *,
    stage: Stage,
    endpoint: Endpoint,
    prompt: PromptVersion,
    samples: int = 1,
    temperature: float | None = None,
    fills_human_slot: bool = False,
) -> ModelRater:
    """A model rater in ``stage`` (module docstring)."""
    if prompt.template.project_id != stage.project_id:
        raise ApplicationError(
            "The prompt belongs to another project.", {"prompt": str(prompt.template.name)}
        )
    if prompt.template.kind != stage.kind:
        raise ApplicationError(
            f"The prompt asks for {prompt.template.kind!r} answers; stage {stage.slug!r} takes "
            f"{stage.kind!r}.",
            {"prompt": prompt.template.kind},
        )
    if prompts.answer_schema(stage) is None:
        raise ApplicationError(
            f"Stage {stage.slug!r} ({stage.kind}) has no structured answer a model can give.",
            {"stage": stage.slug},
        )
    if not 1 <= samples <= MAX_SAMPLES:
        raise ApplicationError(
            f"Samples must be between 1 and {MAX_SAMPLES} (got {samples}).", {"samples": samples}
        )
    if samples > 1 and not temperature:
        raise ApplicationError(
            "Several samples need a temperature above 0, or every sample is the same.",
            {"temperature": temperature},
        )
    if ModelRater.objects.filter(stage=stage, endpoint=endpoint, prompt=prompt).exists():
        raise Conflict("This model already rates in this stage with this prompt version.")
    username = _rater_username(stage, endpoint, prompt)
    user = User(username=username, is_active=False, first_name=f"Model {endpoint.name}")
    user.set_unusable_password()
    user.save()
    membership_add(project=stage.project, user=user, role=Role.ANNOTATOR)
    rater = ModelRater.objects.create(
        stage=stage,
        endpoint=endpoint,
        prompt=prompt,
        user=user,
        samples=samples,
        temperature=temperature,
        fills_human_slot=fills_human_slot,
    )
    if not fills_human_slot:
        _reserve(stage, +1)
    return rater


def _reserve(stage: Stage, delta: int) -> None:
    """One slot more (or fewer) for an extra model rater, and the rule that keeps it."""
    stage_slots_add(stage=stage, delta=delta)
    stage.refresh_from_db()
    rules = [dict(rule) for rule in (stage.eligibility or [])]
    has_rule = any(rule.get("rule") == "model_slots" for rule in rules)
    extra = ModelRater.objects.filter(stage=stage, active=True, fills_human_slot=False).exists()
    if extra and not has_rule:
        stage_update(stage=stage, eligibility=[*rules, {"rule": "model_slots"}])
    elif not extra and has_rule:
        stage_update(stage=stage, eligibility=[r for r in rules if r.get("rule") != "model_slots"])


@transaction.atomic
def rater_remove(*, rater: ModelRater) -> ModelRater:
    """Stop the rater (its answers stay); an extra rater's slot goes away again."""
    locked = ModelRater.objects.select_for_update().get(pk=rater.pk)
    if not locked.active:
        return locked
    Run.objects.filter(rater=locked, status__in=Run.ACTIVE).update(
        status=Run.Status.CANCELLED, finished_at=timezone.now()
    )
    locked.active = False
    locked.save(update_fields=["active"])
    if not locked.fills_human_slot:
        _reserve(locked.stage, -1)
    return locked


@transaction.atomic
def run_start(*, rater: ModelRater, by: User | None = None) -> Run:
    """A new run of the rater, sent to the workers after commit."""
    locked = ModelRater.objects.select_for_update().get(pk=rater.pk)
    if not locked.active:
        raise ApplicationError("This model rater was removed.", {"rater": locked.pk})
    if Run.objects.filter(rater=locked, status__in=[*Run.ACTIVE, Run.Status.PAUSED]).exists():
        raise Conflict("This rater already has a run in progress or paused: resume it.")
    run = Run.objects.create(
        project_id=locked.stage.project_id, purpose=Run.Purpose.RATE, rater=locked, created_by=by
    )
    _send(run)
    return run


def _send(run: Run) -> None:
    from llm.tasks import rater_run

    enqueue_on_commit(rater_run, run.pk)


@transaction.atomic
def run_control(*, run: Run, action: str) -> Run:
    """``pause``, ``resume`` or ``cancel`` a run; a refused move is a Conflict naming it."""
    locked = Run.objects.select_for_update().get(pk=run.pk)
    moves: dict[str, tuple[tuple[str, ...], str]] = {
        "pause": ((Run.Status.QUEUED, Run.Status.RUNNING), Run.Status.PAUSED),
        "resume": ((Run.Status.PAUSED,), Run.Status.QUEUED),
        "cancel": (
            (Run.Status.QUEUED, Run.Status.RUNNING, Run.Status.PAUSED),
            Run.Status.CANCELLED,
        ),
    }
    if action not in moves:
        raise ApplicationError(f"Unknown action {action!r}.", {"action": "pause, resume or cancel"})
    allowed, target = moves[action]
    if locked.status not in allowed:
        raise Conflict(f"A {locked.get_status_display().lower()} run cannot {action}.")
    locked.status = target
    if target == Run.Status.CANCELLED:
        locked.finished_at = timezone.now()
    locked.save(update_fields=["status", "finished_at"])
    if target == Run.Status.QUEUED and locked.purpose == Run.Purpose.RATE:
        _send(locked)
    elif target == Run.Status.QUEUED and locked.purpose == Run.Purpose.GENERATE:
        from llm.generation import send

        send(locked)
    return locked


def runs_stuck(*, queued_seconds: float = 60) -> list[int]:
    """Rater runs to send again: queued for more than ``queued_seconds`` (a lost message) or
    running with a stale heartbeat (a dead worker; llm.runs.STALE_SECONDS)."""
    from datetime import timedelta

    from llm.runs import STALE_SECONDS

    now = timezone.now()
    return list(
        Run.objects.filter(purpose=Run.Purpose.RATE)
        .filter(
            Q(status=Run.Status.QUEUED, created_at__lt=now - timedelta(seconds=queued_seconds))
            | Q(status=Run.Status.RUNNING, heartbeat_at__lt=now - timedelta(seconds=STALE_SECONDS))
        )
        .values_list("pk", flat=True)
    )


def prompt_preview(
    *, version: PromptVersion, stage: Stage, item_ids: list[int], endpoint: Endpoint | None = None
) -> list[dict[str, Any]]:
    """What the model would be shown for each item (messages, variables the item lacks) and,
    with an endpoint, its raw and parsed answer — through the ledger under purpose
    ``preview``, so looking again costs no second call."""
    from annotation.models import Item
    from llm.ledger import call_key, call_once

    schema = prompts.answer_schema(stage)
    previews = []
    for item in Item.objects.filter(project_id=stage.project_id, pk__in=item_ids).order_by("pk"):
        fields = prompts.item_fields(item, stage)
        json_mode = endpoint.json_schema_mode if endpoint else True
        messages = prompts.render(version, fields, schema=schema, json_schema_mode=json_mode)
        preview: dict[str, Any] = {
            "item": item,
            "fields": fields,
            "missing": [name for name in prompts.fields_used(version) if name not in fields],
            "messages": messages,
        }
        if endpoint is not None:
            call = call_once(
                key=call_key("preview", endpoint, version, f"item:{item.pk}", 0),
                endpoint=endpoint,
                messages=messages,
                parse=partial(prompts.parse_answer, stage=stage, item=item),
                response_format=prompts.answer_format(schema, endpoint),
                prompt=version,
                item_id=item.pk,
                subject=f"preview:item:{item.pk}",
            )
            preview["call"] = call
        previews.append(preview)
    return previews
