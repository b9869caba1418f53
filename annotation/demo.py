"""The engine's demo project (its plug-in's ``demo``, annotation/apps.py): a verify → label
pipeline over 36 sentence pairs with every demo user in their role. ``manage.py seed_demo``
runs it first, then every other plug-in's demo."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from annotation import services
from annotation.fixtures.demo_pairs import DEMO_PAIRS
from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.models import Project

DEMO_SLUG = "demo"
GUIDELINES = """Each item is a pair of events, A then B.

**Verify**: keep the pair if both sentences are fluent English and each describes one event;
reject it otherwise.

**Label**: choose *causal* when A brings about B, *temporal* when A merely happens before B, and
*unrelated* when the two events have nothing to do with each other."""


def engine_demo_seed(*, users: Mapping[str, Any]) -> None:
    """The engine's demo (its plug-in's ``demo``): the verify → label pipeline over the demo
    pairs, with every demo user in their role. Safe to run again."""
    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is None:
        project = services.project_create(
            slug=DEMO_SLUG,
            name="Causal pairs (demo)",
            description="A small two-stage pipeline: verify the pairs, then label the relation.",
            guidelines=GUIDELINES,
        )
        services.stage_create(
            project=project,
            slug="verify",
            name="Verify pairs",
            kind="verify",
            overlap=3,
            instructions="Keep fluent pairs of single events; reject anything else.",
        )
        services.stage_create(
            project=project,
            slug="label",
            name="Label the relation",
            kind="label",
            overlap=3,
            # One settled item in four is drawn for a reviewer's spot check (agreement/spot_checks.py).
            config={"choices": ["causal", "temporal", "unrelated"], "spot_check_rate": 0.25},
            instructions="Does A cause B, merely precede it, or neither?",
        )
        services.items_create(
            project=project,
            rows=[
                {
                    "external_id": f"demo-{index:03d}",
                    "payload": {"sentence_a": a, "sentence_b": b, "expected": expected},
                    "source": "rungwise-demo",
                }
                for index, (a, b, expected) in enumerate(DEMO_PAIRS, start=1)
            ],
        )
    for name, user in users.items():
        services.membership_add(project=project, user=user, role=DEMO_ROLES[name])
    rescue_demo_seed(users=users)
    from annotation.demo_adaptive import adaptive_demo_seed

    adaptive_demo_seed(users=users)


RESCUE_SLUG = "demo-rescue"


def rescue_demo_seed(*, users: Mapping[str, Any]) -> None:
    """The item actions' demo (annotation/services/item_actions.py): four items on a verify
    stage that needs all three demo annotators per item. annotator3 skipped one of the two
    items the others answered — stranded, so Setup and the Agreement dashboard warn and link
    to it, and its page says why; the other is decided; of the two fresh items the admin
    discarded one (its history shows it) and annotator1 holds the other (an open lease to
    release). Needs the demo cast; safe to run again."""
    from annotation.access import access_stage_for_annotator
    from annotation.services.item_actions import items_act

    needed = ("admin", "annotator1", "annotator2", "annotator3")
    if Project.objects.filter(slug=RESCUE_SLUG).exists() or not all(n in users for n in needed):
        return
    project = services.project_create(
        slug=RESCUE_SLUG,
        name="Stranded items (demo)",
        description="Every item needs all three annotators, so one skip strands an item: "
        "follow the warning to it (as admin) and resolve it by hand.",
        guidelines=GUIDELINES,
    )
    stage = services.stage_create(
        project=project, slug="verify", name="Verify pairs", kind="verify", overlap=3
    )
    items = services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"rescue-{index:03d}",
                "payload": {"sentence_a": a, "sentence_b": b},
                "source": "rungwise-demo",
            }
            for index, (a, b, _) in enumerate(DEMO_PAIRS[:4], start=1)
        ],
    )
    for name, user in users.items():
        services.membership_add(project=project, user=user, role=DEMO_ROLES[name])

    def take(name: str) -> Any:
        user = users[name]
        access = access_stage_for_annotator(user=user, stage_id=stage.pk)
        return user, services.assignment_next(annotator=user, stage=access)

    # Depth-first: each annotator's first items are the ones already in progress.
    for name in ("annotator1", "annotator2"):
        for _ in range(2):
            user, held = take(name)
            services.annotation_submit(
                assignment_id=held.pk, annotator=user, payload={"value": "keep"}
            )
    user, held = take("annotator3")
    services.assignment_skip(
        assignment_id=held.pk, annotator=user, reason="I can't judge this item"
    )
    user, held = take("annotator3")
    services.annotation_submit(assignment_id=held.pk, annotator=user, payload={"value": "keep"})
    fresh = [
        item.pk for item in items if not item.item_stages.filter(submitted_count__gt=0).exists()
    ]
    items_act(
        project,
        fresh[:1],
        "discard",
        by=users["admin"],
        reason="A near-duplicate of another pair.",
    )
    take("annotator1")
