"""review/causalt5k/migrations/0004_blind_baseline_stages: existing projects' blind stages
(CausalT5k's answer stage, METER's human baseline) get the ``blind`` rule their templates now
add; other stages, and a stage that already has the rule, are left as they are."""

from __future__ import annotations

import pytest

from tests.test_migrations import _leaf_targets, _migrate

# The engine as it was then too: its Stage still had the agreement refresh columns.
BEFORE = [("review", "0003_duplicate_survivor_cascade"), ("annotation", "0008_annotation_versions")]


@pytest.mark.django_db(transaction=True)
def test_existing_blind_stages_get_the_blind_rule():
    leaves = _leaf_targets()
    old = _migrate(BEFORE)
    try:
        Project = old.get_model("annotation", "Project")
        Stage = old.get_model("annotation", "Stage")
        project = Project.objects.create(slug="old", name="Old project")

        def stage(slug, kind, eligibility):
            return Stage.objects.create(
                project=project,
                position=Stage.objects.filter(project=project).count(),
                slug=slug,
                name=slug,
                kind=kind,
                seed=1,
                eligibility=eligibility,
            ).pk

        ids = {
            "answer": stage("answer", "ct5k_answer", [{"rule": "not_author"}]),
            "baseline": stage("baseline", "meter_answer", []),
            "already": stage("already", "meter_answer", [{"rule": "blind"}]),
            "score": stage("score", "ct5k_score", [{"rule": "not_author"}]),
        }
    finally:
        _migrate(leaves)
    from annotation.models import Stage as NewStage

    rules = dict(NewStage.objects.filter(pk__in=ids.values()).values_list("slug", "eligibility"))
    assert rules == {
        "answer": [{"rule": "not_author"}, {"rule": "blind", "made_from": "case_id"}],
        "baseline": [{"rule": "blind", "made_from": "pair_id"}],
        "already": [{"rule": "blind"}],
        "score": [{"rule": "not_author"}],
    }
