"""Fitting a stage's annotator models (agreement/aggregation/services.py) through the engine: the
agreement refresh fits every model after resolutions, stores every item stage's posterior and
every rater's reliability with a seeded bootstrap interval, and the spammers come out worst."""

from __future__ import annotations

import pytest

from agreement import services as agreement_services
from agreement.aggregation import estimators
from agreement.aggregation.services import MIN_ITEMS, stage_aggregation_fit
from agreement.models import AggregationFit, ItemPosterior
from annotation.models import ItemStage
from tests.agreement.aggregation import study as planted

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(django_capture_on_commit_callbacks):
    built = planted.build(slug="fit")
    planted.annotate(built, django_capture_on_commit_callbacks, items=18)
    return built


def test_the_agreement_refresh_fits_a_model_stage_once_it_has_enough_items(study):
    # The coalesced refresh after the resolutions fitted the stage (it has MIN_ITEMS or more).
    fits = AggregationFit.objects.filter(stage=study.stage)
    assert sorted(fit.model for fit in fits) == sorted(estimators.MODELS)
    fitted_at = {fit.n_items for fit in fits}
    assert len(fitted_at) == 1 and fitted_at.pop() >= MIN_ITEMS
    # Nothing grew: a forced refresh of the figures does not refit.
    before = {fit.pk: fit.computed_at for fit in fits}
    agreement_services.stage_agreement_refresh(stage_id=study.stage.pk, force=True)
    after = {fit.pk: fit.computed_at for fit in AggregationFit.objects.filter(stage=study.stage)}
    assert before == after
    stage_aggregation_fit(stage_id=study.stage.pk)
    completed = ItemStage.objects.filter(stage=study.stage).exclude(state="open").count()
    for fit in AggregationFit.objects.filter(stage=study.stage):
        assert fit.categories == list(planted.LABELS)
        assert fit.n_items == completed == 18
        assert ItemPosterior.objects.filter(fit=fit).count() == completed
        assert fit.bootstrap_replicates > 0


def test_a_majority_stage_is_not_fitted_by_the_refresh(django_capture_on_commit_callbacks):
    plain = planted.build(slug="plain", policy="majority")
    planted.annotate(plain, django_capture_on_commit_callbacks, items=12)
    agreement_services.stage_agreement_refresh(stage_id=plain.stage.pk, force=True)
    assert not AggregationFit.objects.filter(stage=plain.stage).exists()


def test_models_beat_the_spammers_plurality_and_rank_spammers_last(study):
    fits = {fit.model: fit for fit in stage_aggregation_fit(stage_id=study.stage.pk)}
    spammer_ids = {user.pk for user in study.spammers}
    for model, fit in fits.items():
        rows = list(ItemPosterior.objects.filter(fit=fit).select_related("item_stage__item"))
        right = sum(row.label == planted.truth(row.item_stage.item) for row in rows)
        plurality_right = sum(row.majority == planted.truth(row.item_stage.item) for row in rows)
        assert plurality_right < len(rows), "the spammers should win some pluralities"
        if model == "dawid_skene":
            assert right == len(rows)
        else:
            assert right > plurality_right, model
        assert all(sum(row.posterior) == pytest.approx(1, abs=1e-4) for row in rows)
        figures = dict(zip(fit.raters, fit.reliability, strict=True))
        worst_careful = min(figures[user.pk][0] for user in study.careful)
        for spammer in spammer_ids:
            value, low, high, votes = figures[spammer]
            assert value < worst_careful, model
            assert low is not None and high is not None and low <= high
            assert votes > 0


def test_refitting_replaces_the_fit_and_is_seeded(study):
    first = {fit.model: fit.reliability for fit in stage_aggregation_fit(stage_id=study.stage.pk)}
    again = {fit.model: fit.reliability for fit in stage_aggregation_fit(stage_id=study.stage.pk)}
    assert first == again
    assert AggregationFit.objects.filter(stage=study.stage).count() == len(estimators.MODELS)
    assert ItemPosterior.objects.filter(fit__stage=study.stage).count() == 18 * 3


def test_a_stage_without_enough_votes_gets_no_fit(django_capture_on_commit_callbacks):
    empty = planted.build(slug="empty")
    assert stage_aggregation_fit(stage_id=empty.stage.pk) == []
    assert not AggregationFit.objects.filter(stage=empty.stage).exists()
