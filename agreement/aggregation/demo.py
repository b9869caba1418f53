"""The annotator models' demo (``manage.py seed_demo``, through agreement/apps.py's Plugin
``demo``): "Crowd labels with spammers", a label stage decided by Dawid–Skene (threshold 0.9;
uncertain items ask one more annotator), annotated by a simulated crowd of six careful people of
known accuracy and two planted spammers — one always answers "causal", one answers at random —
then fitted, so the stage's Agreement page shows where the model overturns the plurality, the
spammers at the bottom of the reliability figure, and the cost of each policy. Seeded; safe to
run again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model

from agreement.aggregation.services import stage_aggregation_fit
from annotation import api
from annotation.access import access_stage_for_annotator
from annotation.fixtures.demo_users import demo_members_add
from annotation.models import Project, Role

DEMO_SLUG = "demo-crowd-models"
LABELS = ("causal", "temporal", "none")
#: The simulated crowd: name and accuracy (None: a spammer).
CROWD = (
    ("crowd-ana", 0.95),
    ("crowd-ben", 0.9),
    ("crowd-chloe", 0.85),
    ("crowd-dev", 0.8),
    ("crowd-eli", 0.75),
    ("crowd-fay", 0.7),
    ("crowd-spam-always", None),
    ("crowd-spam-random", None),
)
#: Thirty items: fitted at 10, 20 and 30 completed items (services.MIN_ITEMS, REFIT_ITEMS),
#: so seeding stays quick.
ITEMS = 30
SEED = 20261127
SENTENCES = (
    "The pipe burst, so the kitchen flooded.",
    "She finished her coffee and then left for work.",
    "The cat is asleep on the red chair.",
)


def demo_seed(*, users: Mapping[str, Any]) -> None:
    if Project.objects.filter(slug=DEMO_SLUG).exists():
        return
    project = api.project_create(
        slug=DEMO_SLUG,
        name="Crowd labels with spammers (demo)",
        description="Eight simulated crowd workers label causal relations; two are planted "
        "spammers. The stage decides by Dawid–Skene: its Agreement page shows where the model "
        "overturns the plurality, each worker's reliability and the cost of each policy.",
    )
    stage = api.stage_create(
        project=project,
        slug="label",
        name="Causal relation",
        kind="label",
        overlap=3,
        config={"choices": list(LABELS)},
        resolution_policy="dawid_skene",
        tie_policy="extra_annotation",
        policy_options={"threshold": 0.9},
    )
    api.items_create(
        project=project,
        rows=[
            {
                "external_id": f"crowd-{index:03d}",
                "payload": {"text": SENTENCES[index % 3]},
                "source": "rungwise-demo",
            }
            for index in range(ITEMS)
        ],
    )
    demo_members_add(project, users)
    crowd = []
    for username, accuracy in CROWD:
        user, created = get_user_model().objects.get_or_create(username=username)
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        api.membership_add(project=project, user=user, role=Role.ANNOTATOR)
        crowd.append((user, accuracy))
    rng = np.random.default_rng(SEED)

    def answer(rank: int, accuracy: float | None, truth: str) -> str:
        if accuracy is None:
            return "causal" if rank % 2 == 0 else str(rng.choice(LABELS))
        if rng.random() < accuracy:
            return truth
        return str(rng.choice([label for label in LABELS if label != truth]))

    active = list(enumerate(crowd))
    while active:
        for rank, (user, accuracy) in list(active):
            access = access_stage_for_annotator(user=user, stage_id=stage.pk)
            assignment = api.assignment_next(annotator=user, stage=access)
            if assignment is None:
                active.remove((rank, (user, accuracy)))
                continue
            # The planted truth follows the item's number (never in the payload annotators see).
            truth = LABELS[int(assignment.item_stage.item.external_id.split("-")[1]) % 3]
            api.annotation_submit(
                assignment_id=assignment.pk,
                annotator=user,
                payload={"value": answer(rank, accuracy, truth)},
            )
    # The refresh after the resolutions fits when due; this covers a seed run without it.
    stage_aggregation_fit(stage_id=stage.pk, force=False)
