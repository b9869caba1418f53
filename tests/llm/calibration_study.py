"""A small stage with people and a model rater, built through the engine's own services
(annotation.api), for the calibration tests (tests/llm/test_calibration.py, test_figures.py,
tests/agreement/test_sections.py).

The model rater comes from llm.services (endpoint_save, prompt_template_create, rater_add); its
answers go through assignment_next / annotation_submit as its run would submit them
(llm/runs.py), and the ModelVote rows are written here with the confidences of the table below
(a run computes them from its k samples).

Six items, three people (A, B, C) and the model M, categories causal / temporal / none:

====  ===============  ============  ===========  ==========================================
item  people A B C     decision      model (conf)  note
====  ===============  ============  ===========  ==========================================
0     c c c            causal        c (1.0)       agrees
1     t t t            temporal      t (0.8)       agrees
2     n n c            none          n (0.6)       agrees, not unanimous
3     c t n            — (tie)       c (1.0)       left out
4     c c c            causal        t (0.8)       confident disagreement: the review queue
5     n n n            none          c (0.6)       disagreement below the threshold
====  ===============  ============  ===========  ==========================================

Hand-computed: decided 5, ties 1; confusion (rows decision c, t, n; columns model)
[[1, 1, 0], [0, 1, 0], [1, 0, 1]]; observed agreement 3/5, chance (2·2 + 1·2 + 2·1)/25 = 8/25,
κ = (0.6 − 0.32) / 0.68 = 7/17; accuracy 0.6; bins 1.0 → [1 of 1], 0.8 → [1 of 2],
0.6 → [1 of 2]: ECE = 1/5·0 + 2/5·|0.5 − 0.8| + 2/5·|0.5 − 0.6| = 0.16.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotation import api
from annotation.access import access_stage_for_annotator
from annotation.models import Annotation, Role
from llm import services
from llm.models import DEMO_BASE_URL, Endpoint, ModelVote
from tests.factories import make_member

LABELS = ("causal", "temporal", "none")
C, T, N = LABELS
PEOPLE_VOTES = [(C, C, C), (T, T, T), (N, N, C), (C, T, N), (C, C, C), (N, N, N)]
MODEL_VOTES = [(C, 1.0), (T, 0.8), (N, 0.6), (C, 1.0), (T, 0.8), (C, 0.6)]
KAPPA = 7 / 17
ECE = 0.16


@dataclass
class CalibrationStudy:
    project: Any
    stage: Any
    people: list
    model_user: Any
    rater: Any
    researcher: Any
    annotator: Any


def add_model_rater(stage, *, name: str = "demo-model"):
    """An endpoint, a prompt and an extra model rater on ``stage`` (llm.services.rater_add: its
    own inactive user, one more slot per item kept for it; its answers advise)."""
    endpoint = services.endpoint_save(
        endpoint=Endpoint(name=name, base_url=DEMO_BASE_URL, model="demo")
    )
    version = services.prompt_template_create(
        project=stage.project, name=name, kind=stage.kind, user_text="Label: {{ text }}"
    )
    rater = services.rater_add(
        stage=stage, endpoint=endpoint, prompt=version, samples=5, temperature=0.7
    )
    return rater, rater.user


def _answer(stage, user, choose, *, model: bool = False) -> Annotation:
    """The next item of ``stage`` for ``user``, answered with ``choose(item index)``. A model
    rater's user asks with the stage itself, as its run does (llm/runs.py): it cannot sign in."""
    access = stage if model else access_stage_for_annotator(user=user, stage_id=stage.pk)
    assignment = api.assignment_next(annotator=user, stage=access)
    assert assignment is not None, f"{user} got no item"
    index = int(assignment.item_stage.item.external_id.split("-")[1])
    annotation, _ = api.annotation_submit(
        assignment_id=assignment.pk, annotator=user, payload={"value": choose(index)}
    )
    return annotation


def build(
    capture_on_commit, *, slug: str = "calib", with_model: bool = True, kind: str = "generic"
) -> CalibrationStudy:
    """The study of the module docstring (``capture_on_commit``: pytest-django's
    ``django_capture_on_commit_callbacks``, so that items resolve as they complete). The model
    answers every item first, then each person answers every item. ``kind``: the project's
    workflow (a workflow tab shows only its own projects)."""
    project = api.project_create(name=f"Calibration {slug}", slug=slug, kind=kind)
    stage = api.stage_create(
        project=project,
        kind="label",
        slug="label",
        name="Label",
        overlap=3,
        config={"choices": list(LABELS)},
    )
    api.items_create(
        project=project,
        rows=[
            {"external_id": f"item-{index}", "payload": {"text": f"Sentence {index}."}}
            for index in range(len(PEOPLE_VOTES))
        ],
    )
    people = [make_member(project, username=f"{slug}-person-{rank}") for rank in range(3)]
    rater = model_user = None
    if with_model:
        rater, model_user = add_model_rater(stage, name=f"{slug}-model")
        for _ in PEOPLE_VOTES:
            with capture_on_commit(execute=True):
                annotation = _answer(
                    stage, model_user, lambda index: MODEL_VOTES[index][0], model=True
                )
                index = int(annotation.item_stage.item.external_id.split("-")[1])
                ModelVote.objects.create(
                    rater=rater,
                    item_stage=annotation.item_stage,
                    annotation=annotation,
                    value=MODEL_VOTES[index][0],
                    confidence=MODEL_VOTES[index][1],
                    samples=5,
                )
    for rank, person in enumerate(people):
        for _ in PEOPLE_VOTES:
            with capture_on_commit(execute=True):
                _answer(stage, person, lambda index, rank=rank: PEOPLE_VOTES[index][rank])
    return CalibrationStudy(
        project=project,
        stage=stage,
        people=people,
        model_user=model_user,
        rater=rater,
        researcher=make_member(project, Role.RESEARCHER, username=f"{slug}-researcher"),
        annotator=people[0],
    )
