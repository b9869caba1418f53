"""The adaptive overlap demo (annotation/adaptive.py), seeded by the engine's demo
(annotation/demo.py): *Adaptive labels (demo)*, a label stage that starts with two annotators,
asks a third only on disagreement and more while the label's confidence is below 0.85, up to
five. Four simulated raters (accounts without a password, members of this project only)
answered first, so that the demo shows every state: items settled by two agreeing answers,
1–1 splits waiting for a third annotator, a 2–1 item waiting for a fourth, a 4–1 item decided
at five, and a 3–2 item decided at the cap. ``annotator1``–``3`` give the answers still wanted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth import get_user_model

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.fixtures.demo_pairs import DEMO_PAIRS
from annotation.fixtures.demo_users import DEMO_ROLES
from annotation.models import Project, Role

ADAPTIVE_SLUG = "demo-adaptive"
#: The simulated raters' answers, one tuple per item; the longest first, so that each rater's
#: next item (depth-first: items in progress first) is the one being answered. The other five
#: of the 12 items stay fresh.
EARLIER_ANSWERS = [
    ("causal", "temporal", "causal", "causal", "causal"),  # 4–1 (0.89): decided at five
    ("causal", "temporal", "causal", "temporal", "causal"),  # 3–2 (0.66): decided at the cap
    ("causal", "temporal", "causal"),  # 2–1 (0.69): a fourth annotator wanted
    ("causal", "temporal"),  # 1–1: a third annotator wanted
    ("temporal", "unrelated"),  # 1–1: a third annotator wanted
    ("causal", "causal"),  # settled at two (0.875)
    ("temporal", "temporal"),  # settled at two
]
SIMULATED = [f"adaptive-rater-{number}" for number in range(1, 6)]


def adaptive_demo_seed(*, users: Mapping[str, Any]) -> None:
    """Create the adaptive demo project with its earlier answers; safe to run again."""
    if Project.objects.filter(slug=ADAPTIVE_SLUG).exists():
        return
    project = services.project_create(
        slug=ADAPTIVE_SLUG,
        name="Adaptive labels (demo)",
        description="Two annotators per item; a third only when they disagree, and more "
        "while the label's confidence is below 0.85, at most five.",
        guidelines="Does A cause B, merely precede it, or neither?",
    )
    stage = services.stage_create(
        project=project,
        slug="label",
        name="Label the relation (adaptive)",
        kind="label",
        overlap=2,
        max_overlap=5,
        tie_policy="extra_annotation",
        policy_options={"confidence": 0.85},
        config={"choices": ["causal", "temporal", "unrelated"]},
        instructions="Does A cause B, merely precede it, or neither?",
    )
    services.items_create(
        project=project,
        rows=[
            {
                "external_id": f"adaptive-{index:03d}",
                "payload": {"sentence_a": a, "sentence_b": b},
                "source": "rungwise-demo",
            }
            for index, (a, b, _) in enumerate(DEMO_PAIRS[:12], start=1)
        ],
    )
    raters = []
    for name in SIMULATED:
        rater, created = get_user_model().objects.get_or_create(username=name)
        if created:
            rater.set_unusable_password()
            rater.save(update_fields=["password"])
        services.membership_add(project=project, user=rater, role=Role.ANNOTATOR)
        raters.append(rater)
    for answers in EARLIER_ANSWERS:
        item_stage_id = None
        for rater, value in zip(raters, answers, strict=False):
            access = access_stage_for_annotator(user=rater, stage_id=stage.pk)
            held = services.assignment_next(annotator=rater, stage=access)
            assert held is not None, rater.username
            # The first rater opens a fresh item; the next ones are handed it (in progress).
            item_stage_id = item_stage_id or held.item_stage_id
            assert held.item_stage_id == item_stage_id, (rater.username, answers)
            services.annotation_submit(
                assignment_id=held.pk, annotator=rater, payload={"value": value}
            )
            # seed_demo runs in one transaction, so the on-commit resolution would come only
            # at its end; resolve now (idempotent) so that the next rater sees the new slot.
            services.item_stage_resolve(item_stage_id=item_stage_id)
    for name, user in users.items():
        if name in DEMO_ROLES:
            services.membership_add(project=project, user=user, role=DEMO_ROLES[name])
