"""The dawid_skene, mace and glad resolution policies (agreement/aggregation/policies.py): the
plurality before a fit, the fitted model's most probable label after it — against a plurality of
spammers — and uncertain items to one more annotator or to adjudication by the tie policy."""

from __future__ import annotations

import pytest

from agreement.aggregation.policies import DawidSkenePolicy
from agreement.aggregation.services import MIN_ITEMS, stage_aggregation_fit
from agreement.models import AggregationFit
from annotation.errors import ApplicationError
from annotation.models import ItemStage, Resolution
from annotation.policies import POLICIES, Ballot, PolicySettings, check_settings
from tests.agreement.aggregation import study as planted


def test_the_three_policies_are_registered():
    assert {"dawid_skene", "mace", "glad"} <= set(POLICIES)


@pytest.mark.parametrize("threshold", [0.3, 1, 1.5, "high", True])
def test_a_threshold_outside_its_range_is_refused_in_words(threshold):
    with pytest.raises(ApplicationError, match="threshold"):
        check_settings("dawid_skene", PolicySettings(options={"threshold": threshold}))


def test_an_unknown_option_is_refused():
    with pytest.raises(ApplicationError, match="no option"):
        check_settings("mace", PolicySettings(options={"cutoff": 0.9}))


def test_without_a_stage_the_policy_decides_by_plurality():
    ballots = [Ballot("none", {}, annotator=1), Ballot("none", {}, annotator=2)]
    decision = DawidSkenePolicy().decide(ballots, PolicySettings(required=2))
    assert decision.value == "none"
    assert "not fitted" in decision.reason


def _spammed_item_stages(study):
    """Resolved item stages where both spammers voted (their plurality is "causal")."""
    spammers = {user.pk for user in study.spammers}
    found = []
    for item_stage in ItemStage.objects.filter(stage=study.stage).select_related("item"):
        voters = set(item_stage.annotations.values_list("annotator_id", flat=True))
        if spammers <= voters and planted.truth(item_stage.item) != "causal":
            found.append(item_stage)
    return found


@pytest.mark.django_db
def test_after_the_fit_the_model_outvotes_the_spammers(django_capture_on_commit_callbacks):
    study = planted.build(slug="ds-policy", policy="dawid_skene")
    # Fewer items than a fit needs (services.MIN_ITEMS): decided by plurality, so items both
    # spammers voted on went to "causal".
    planted.annotate(study, django_capture_on_commit_callbacks, items=MIN_ITEMS - 1)
    assert not AggregationFit.objects.filter(stage=study.stage).exists()
    early = _spammed_item_stages(study)
    assert early, "the planted study should pair the two spammers on some items"
    for item_stage in early:
        assert item_stage.resolution.value == "causal"
        assert "not fitted" in item_stage.resolution.reason
    stage_aggregation_fit(stage_id=study.stage.pk)
    planted.annotate(study, django_capture_on_commit_callbacks, items=18, prefix="later")
    later = [
        item_stage
        for item_stage in _spammed_item_stages(study)
        if item_stage.item.external_id.startswith("later")
    ]
    assert later
    decided = 0
    for item_stage in later:
        # The spammers' plurality never wins: the model decides the truth, or (below the
        # threshold) the item waits for a reviewer (the stage's tie policy: adjudicate).
        resolution = Resolution.objects.get(item_stage=item_stage)
        if resolution.value is None:
            assert resolution.status == "needs_adjudication"
            assert resolution.reason.startswith("Dawid–Skene: uncertain")
        else:
            assert resolution.value == planted.truth(item_stage.item)
            assert resolution.reason.startswith("Dawid–Skene: P(")
            decided += 1
    assert decided >= len(later) / 2


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tie_policy", "status", "needs_more"),
    [("extra_annotation", "tie", True), ("adjudicate", "needs_adjudication", False)],
)
def test_an_uncertain_item_follows_the_tie_policy(
    django_capture_on_commit_callbacks, tie_policy, status, needs_more
):
    study = planted.build(slug=f"unsure-{tie_policy[:5]}", policy="dawid_skene")
    planted.annotate(study, django_capture_on_commit_callbacks, items=18)
    stage_aggregation_fit(stage_id=study.stage.pk)
    # One careful annotator against one careful annotator: a coin toss for the model.
    first, second = study.careful[:2]
    ballots = [
        Ballot("none", {}, annotator=1, rater=first.pk),
        Ballot("temporal", {}, annotator=2, rater=second.pk),
    ]
    settings = PolicySettings(
        tie_policy=tie_policy, required=2, stage_id=study.stage.pk, options={"threshold": 0.9}
    )
    decision = DawidSkenePolicy().decide(ballots, settings)
    assert (decision.status, decision.outcome, decision.needs_more) == (
        status,
        "pending",
        needs_more,
    )
    assert "uncertain" in decision.reason
    # The same two votes with a low enough threshold are decided.
    assert AggregationFit.objects.filter(stage=study.stage, model="dawid_skene").exists()
