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

from functools import partial
from typing import Any

from django.db import transaction

from annotation.models import ItemStage, Project, Stage
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
    (
        "causalt5k-demo",
        "score",
        "judge-case",
        "You judge a causal-reasoning benchmark case on a rubric, as a strict expert reviewer: "
        "score each criterion as a whole number on its scale.",
        "Scenario: {{ scenario }}\nClaim: {{ claim }}\nLabel: {{ label }}\n"
        "Trap: {{ trap_name }}\nRationale: {{ rationale }}\n"
        'Answer {"scores": {criterion: score, ...}, "comment": one sentence}.',
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


CALIBRATION_SLUG = "models-demo"
LABELS = ["causal", "temporal", "none"]
#: (sentence, the label most people give)
SENTENCES = [
    ("The storm knocked the power line down, so the street went dark.", "causal"),
    ("She finished her coffee and then she left for work.", "temporal"),
    ("The bridge was closed because the river had flooded it.", "causal"),
    ("He painted the fence on Saturday; it rained on Sunday.", "temporal"),
    ("The soup is hot and the bread is fresh.", "none"),
    ("After the vaccine campaign, measles cases fell sharply.", "causal"),
    ("The train left at nine, and the shop opened at ten.", "temporal"),
    ("Because the battery died, the car would not start.", "causal"),
    ("The cat sleeps on the sofa; the dog sleeps by the door.", "none"),
    ("The price of wheat rose after the drought destroyed the harvest.", "causal"),
    ("They married in June and bought a house in August.", "temporal"),
    ("The lake is deep and the mountains are high.", "none"),
    ("The alarm rang, so everyone left the building.", "causal"),
    ("He read the letter, then he put it in a drawer.", "temporal"),
    ("The glass broke when it fell on the stone floor.", "causal"),
    ("The library has old books and new computers.", "none"),
]


def _person_answer(index: int, item_index: int, label: str) -> str:
    """Mostly the common label; now and then a person sees it otherwise (a fixed pattern)."""
    if (index * 7 + item_index * 3) % 10 == 0:
        return LABELS[(LABELS.index(label) + 1) % 3]
    return label


def _drive(stage: Stage, people: list[Any], labels: dict[str, tuple[int, str]]) -> None:
    from annotation.api import annotation_submit, assignment_next, item_stage_resolve

    active = list(range(len(people)))
    while active:
        for index in list(active):
            assignment = assignment_next(annotator=people[index], stage=stage)
            if assignment is None:
                active.remove(index)
                continue
            item_index, label = labels[assignment.item_stage.item.external_id]
            annotation_submit(
                assignment_id=assignment.pk,
                annotator=people[index],
                payload={"value": _person_answer(index, item_index, label)},
            )
            state = ItemStage.objects.filter(pk=assignment.item_stage_id).values_list(
                "state", flat=True
            )
            if state.first() == ItemStage.State.RESOLVING:
                item_stage_resolve(item_stage_id=assignment.item_stage_id)


def _calibration_demo(endpoint: Endpoint, users: dict[str, Any]) -> None:
    """A project where a model labels beside three people (three samples each, so its votes
    carry a confidence): the Agreement page's models-against-people figures have data, and
    four items are left for the demo annotators to click through."""
    from annotation.api import items_create, project_create, stage_create
    from annotation.fixtures.demo_users import demo_members_add
    from llm.services import prompt_template_create, rater_add, run_start

    project = Project.objects.filter(slug=CALIBRATION_SLUG).first()
    if project is not None:
        demo_members_add(project, users)
        return
    project = project_create(
        slug=CALIBRATION_SLUG,
        name="Models beside people (demo)",
        description="A model labels causal relations beside three people, as an extra rater "
        "that advises: its answers are measured against theirs (Agreement page), not counted.",
    )
    demo_members_add(project, users)
    stage = stage_create(
        project=project, slug="label", name="Label the relation", kind="label", overlap=3,
        config={"choices": LABELS},
        instructions="Is the relation between the two events causal, only temporal, or none?",
    )  # fmt: skip
    labels = {f"s{i:02d}": (i, label) for i, (_, label) in enumerate(SENTENCES)}
    rows = [{"external_id": f"s{i:02d}", "payload": {"text": text}} for i, (text, _) in
            enumerate(SENTENCES)]  # fmt: skip
    items_create(project=project, rows=rows[:12])
    version = prompt_template_create(
        project=project,
        name="label-relation",
        kind="label",
        system_text="You label the relation a sentence states between two events.",
        user_text='Sentence: {{ text }}\nAnswer {"value": "causal" | "temporal" | "none"}.',
    )
    rater = rater_add(stage=stage, endpoint=endpoint, prompt=version, samples=3, temperature=0.7)
    run_start(rater=rater)
    people = [users[name] for name in ("annotator1", "annotator2", "annotator3") if name in users]
    _drive(stage, people[:3], labels)
    items_create(project=project, rows=rows[12:])


#: The demo projects whose first release the demo endpoint answers (llm/evaluation).
EVALUATED = ("meter-demo",)


def _evaluation_demo(endpoint: Endpoint, users: dict[str, Any]) -> None:
    """Publish v1 of the METER demo and evaluate it with the demo
    endpoint beside the release's human baseline (the Evaluations tab). With tasks in-process
    (``make run``) both happen here; with workers the build is still running when the seed
    ends, and the evaluation is left for the tab's form."""
    from llm.models import Evaluation
    from releases.models import Release
    from releases.services import release_publish, release_publish_refusal

    for slug in EVALUATED:
        project = Project.objects.filter(slug=slug).first()
        if project is None or Evaluation.objects.filter(release__project=project).exists():
            continue
        release = Release.objects.filter(project=project, status=Release.Status.PUBLISHED).first()
        if release is None:
            if release_publish_refusal(project) is not None:
                continue
            release = release_publish(
                project=project, user=users.get("admin"), notes="Demo release for evaluation."
            )
        # After the build's own on-commit task (registered first, so it has run by then).
        transaction.on_commit(partial(_evaluate, release.pk, endpoint, users.get("admin")))


def _evaluate(release_id: int, endpoint: Endpoint, user: Any) -> None:
    from llm.evaluation.services import evaluation_start
    from releases.models import Release

    release = Release.objects.get(pk=release_id)
    if release.status == Release.Status.PUBLISHED:
        evaluation_start(release=release, endpoint=endpoint, user=user)


def seed(*, users: dict[str, Any]) -> None:
    endpoint = demo_endpoint()
    for target in TARGETS:
        if Project.objects.filter(slug=target[0]).exists():
            _model_step(endpoint, target)
    _calibration_demo(endpoint, users)
    _evaluation_demo(endpoint, users)
