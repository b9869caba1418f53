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
