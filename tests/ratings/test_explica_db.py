"""ExpliCa's released files through the database: import (the app's own import path), read back,
aggregate, and compare with the published labels. Skipped when ../shared is absent."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import call_command

from annotation.models import Annotation, Item, ItemStage
from ratings import explica, selectors, stats
from ratings.models import ModelRun, RatingsSetup, SentencePair
from tests.ratings.conftest import explica_data_dir

DATA = explica_data_dir()
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.django_db,
    pytest.mark.skipif(DATA is None, reason="shared ExpliCa data folder not found"),
]
FEW_SHOT = "res/acceptability/fewshot/accept_res_outlines_gpt-4o_few.tsv"


@pytest.fixture
def imported(postgres):
    call_command(
        "ratings_import_explica", "explica", "--data", str(DATA), "--models", FEW_SHOT, verbosity=0
    )
    return RatingsSetup.objects.select_related("project").get(project__slug="explica").project


def test_the_release_imports_reads_back_and_reproduces_every_published_label(imported):
    project = imported
    setup = RatingsSetup.objects.get(project=project)
    assert SentencePair.objects.filter(project=project).count() == 600
    assert Item.objects.filter(project=project).count() == 4800
    assert (
        SentencePair.objects.filter(project=project, flags=["socially challenging"]).count() == 70
    )
    historic = ItemStage.objects.filter(stage=setup.historic_stage)
    assert historic.count() == 4800 and set(historic.values_list("submitted_count", flat=True)) == {
        15
    }
    assert Annotation.objects.filter(item_stage__stage=setup.historic_stage).count() == 72_000
    assert not ItemStage.objects.filter(stage=setup.rating_stage).exists()

    context = selectors.ratings_context(project)
    ratings = selectors.ratings_frame(context, source="historic")
    assert len(ratings) == 72_000 and ratings["rater"].isna().all()
    labels = stats.pair_labels(stats.item_summary(ratings), context.connective_set, context.rule)
    published = {
        (pair_id, order): label
        for pair_id, extra in SentencePair.objects.filter(project=project).values_list(
            "pair_id", "extra"
        )
        for order, label in extra["published_label"].items()
    }
    computed = {(row.pair_id, row.order): row.label for row in labels.itertuples()}
    assert len(published) == 1200
    assert computed == published

    # The same means as the published ones, to the last bits.
    ordered = explica.read_ordered_pairs(DATA / "explica" / "explica_freq_4800.tsv")
    expected = explica.published_items(ordered).assign(item_key=lambda f: f["item_key"].astype(str))
    means = stats.item_summary(ratings).set_index("item_key")["mean"]
    assert np.allclose(
        means.reindex(expected["item_key"]).to_numpy(), expected["mean"].to_numpy(), atol=1e-9
    )


def test_the_researcher_page_analysis_of_the_release(imported):
    context = selectors.ratings_context(imported)
    run = ModelRun.objects.get(project=imported)
    assert (run.name, run.n_answers) == ("gpt-4o_few", 4800)
    analysis = selectors.compute_analysis(context, source="historic", run=run)
    built = analysis.report
    assert built.figures["alpha_ordinal"].value == pytest.approx(0.4502, abs=5e-5)
    assert built.figures["alpha_interval"].value == pytest.approx(0.4694, abs=5e-5)
    low, high = built.figures["alpha_interval"].low, built.figures["alpha_interval"].high
    assert low < 0.4694 < high and high - low < 0.05
    assert built.figures["split_half"].value == pytest.approx(0.930, abs=0.005)
    classes = built.tables["classes_by_subset"]
    assert classes.loc["all", ["causal-iconic", "causal-anti-iconic", "temporal-iconic", "temporal-anti-iconic", "unrelated"]].tolist() == [205, 219, 260, 164, 352]  # fmt: skip
    assert classes.loc["causal", "total"] == 400
    assert built.tables["classes_by_origin"].loc["BIG-Bench", "total"] == 70
    summary = built.tables["model_summary"].iloc[0]
    assert summary["accuracy"] == pytest.approx(0.754, abs=5e-4)
    assert summary["spearman_items"] == pytest.approx(0.718, abs=5e-4)
    assert set(analysis.plots) == {"distributions", "means", "model_scatter"}
