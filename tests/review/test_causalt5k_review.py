"""CausalT5k's validation stages (review.causalt5k.pipeline): the near-duplicate queue, the
adversarial review with its author loop (capped), the quality gate with a third reviewer, the
scorers' agreement, eligibility, the tab and the demo. On SQLite here, on PostgreSQL under
`make test`."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import services as engine
from annotation.errors import ApplicationError
from annotation.models import Item, ItemRevision, ItemStage, Resolution
from annotation.services.outcomes import item_stage_resolve
from review.causalt5k.demo import CASES
from review.causalt5k.pipeline import causalt5k_project_create, causalt5k_review_open
from review.meter.demo import drive
from review.models import CausalT5kDuplicate
from tests.factories import make_member

pytestmark = pytest.mark.django_db

BY_ID = {case["case_id"]: case for case in CASES}
SCORE_KEYS = ("structural_validity", "ground_truth", "self_containment", "ecological_realism")


def make(case_ids, **settings):
    project = causalt5k_project_create(slug="ct5k", name="CT5k", seed=5, **settings)
    engine.items_create(
        project=project,
        rows=[{"external_id": cid, "payload": dict(BY_ID[cid])} for cid in case_ids],
        open_first_stage=False,
    )
    stages = {stage.slug: stage for stage in project.stages.all()}
    return project, stages


def scores(*values):
    return {"scores": dict(zip(SCORE_KEYS, values, strict=True))}


def state(project, case_id, slug):
    return ItemStage.objects.get(item__project=project, item__external_id=case_id, stage__slug=slug)


def test_the_pipeline_is_dedup_author_review_score_with_not_author_rules():
    project, stages = make([])
    assert list(stages) == ["dedup", "author", "review", "score"]
    assert stages["review"].eligibility == [{"rule": "not_author"}]
    assert stages["score"].eligibility == [{"rule": "not_author"}]
    assert stages["author"].eligibility == [{"rule": "author_if_known"}]
    assert stages["score"].max_overlap == 3
    assert stages["review"].routes["major"]["max_loops"] == 2
