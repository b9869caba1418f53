"""The demo's model steps (``manage.py seed_demo``): the built-in demo endpoint — a responder
that is NOT a language model (llm/demo_responder.py) — and a model rater working beside the
people in the demo pipelines, run once, so a newcomer can open the Models tab, its runs and
calls, and the Agreement page's models-against-people figures without a model server.
llm/README.md says how to point a project at a real server (vLLM or Ollama on the same machine,
a hosted API).

Which stage gets a model: :data:`TARGETS`, by demo project slug (the workflows' demo slugs;
no workflow module is imported: llm sits below them). A target whose project or stage is
missing (a workflow not installed) is passed over.
"""

from __future__ import annotations

from typing import Any

from annotation.models import Project, Stage
from llm.models import DEMO_BASE_URL, Endpoint, ModelRater, PromptTemplate

DEMO_ENDPOINT = "demo-responder"

#: (demo project slug, stage slug, prompt name, system text, user text)
TARGETS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "meter-demo",
        "verify",
        "verify-pair",
        "You check cause-effect pairs extracted from a text. Keep a pair whose cause really "
        "brings about its effect; otherwise reject it and say why.",
        "Context: {{ context }}\nCause: {{ cause }}\nEffect: {{ effect }}\n"
        'Answer {"value": "keep" | "reject", "reason": "ambiguous" | "erroneous" | '
        '"incomplete" | null}.',
    ),
)


def demo_endpoint() -> Endpoint:
    """The demo responder's endpoint, created once."""
    endpoint, _ = Endpoint.objects.get_or_create(
        name=DEMO_ENDPOINT,
        defaults={
            "base_url": DEMO_BASE_URL,
            "model": "demo-responder (not a language model)",
            "concurrency": 4,
            "requests_per_minute": 0,
            "default_params": {"temperature": 0, "max_tokens": 256, "seed": 1},
        },
    )
    return endpoint


def _model_step(endpoint: Endpoint, target: tuple[str, str, str, str, str]) -> None:
    from llm.services import prompt_template_create, rater_add, run_start

    project_slug, stage_slug, name, system, user = target
    stage = Stage.objects.filter(project__slug=project_slug, slug=stage_slug).first()
    if stage is None or ModelRater.objects.filter(stage=stage).exists():
        return
    template = PromptTemplate.objects.filter(project=stage.project, name=name).first()
    version = (
        template.latest()
        if template is not None
        else prompt_template_create(
            project=stage.project,
            name=name,
            kind=stage.kind,
            system_text=system,
            user_text=user,
        )
    )
    if version is None:
        return
    rater = rater_add(stage=stage, endpoint=endpoint, prompt=version)
    run_start(rater=rater)


def seed(*, users: dict[str, Any]) -> None:
    endpoint = demo_endpoint()
    for target in TARGETS:
        if Project.objects.filter(slug=target[0]).exists():
            _model_step(endpoint, target)
