"""ExpliCa's release scorer (ratings/release_scorer.py) on a slice of the real benchmark, read
from the shared folder beside the checkout (never copied into the repository; skipped when it
is absent): the slice's pairs and their fifteen published human ratings per item imported as
any upload, a release published, and the release put to the local Chat Completions server
whose answers the test chose. The expected figures come from the benchmark's own published
labels (``condition_human`` and ``human_preferred_connective`` in ``explica_freq_4800.tsv``),
not from the release: a model that always gives the published connective scores 1.0; one that
always says "then" is right exactly on the temporal-iconic pairs."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.llm.releases import evaluate_with
from tests.ratings.conftest import explica_data_dir, make_ratings_project

DATA = explica_data_dir()
pytestmark = [
    pytest.mark.shared_data,
    pytest.mark.skipif(DATA is None, reason="shared ExpliCa data folder not found"),
    pytest.mark.django_db,
]
PAIR_FILE = "explica/explica_freq_4800.tsv"
RATINGS_FILE = "res/acceptability/zeroshot/accept_res_outlines_gpt-4o_zero.tsv"
#: Per published label, the connective people preferred (ExpliCa's condition names).
PER_LABEL = {
    "causal-iconic": "so",
    "causal-anti-iconic": "because",
    "temporal-iconic": "then",
    "temporal-anti-iconic": "after",
}


def _slice(tmp_path, pair_ids: list[int]):
    """The benchmark's two files cut to ``pair_ids``: every column, each file in its own
    delimiter (the pair file is comma-separated despite its name, the ratings file tabs)."""
    paths = []
    for name in (PAIR_FILE, RATINGS_FILE):
        with (DATA / name).open(encoding="utf-8") as handle:
            sep = "\t" if "\t" in handle.readline() else ","
        raw = pd.read_csv(DATA / name, sep=sep, dtype=str, keep_default_na=False)
        path = tmp_path / name.rsplit("/", 1)[1]
        raw[raw["pair_id"].astype(int).isin(pair_ids)].to_csv(path, sep=sep, index=False)
        paths.append(path)
    return paths


@pytest.fixture
def release(tmp_path, settings):
    from annotation.models import Role
    from ratings import explica
    from ratings.explica_import import explica_import
    from releases.services import release_build, release_publish
    from tests.factories import make_member

    ordered = explica.read_ordered_pairs(DATA / PAIR_FILE)
    # eight pairs of each published relation in the file's order: 24 pairs, 48 ordered pairs
    subset = ordered.assign(relation=ordered["published_label"].str.split("-").str[0])
    chosen = sorted(
        {
            int(pair_id)
            for _relation, rows in subset.groupby("relation")
            for pair_id in rows["pair_id"].drop_duplicates().head(8)
        }
    )
    pair_file, ratings_file = _slice(tmp_path, chosen)
    settings.MEDIA_ROOT = tmp_path / "media"
    project = make_ratings_project(slug="explica-real")
    explica_import(project=project, pair_file=pair_file, ratings_file=ratings_file)
    admin = make_member(project, Role.ADMIN)
    built = release_build(release_id=release_publish(project=project, user=admin).pk)
    assert built.status == "published", built.message
    published = ordered[ordered["pair_id"].isin(chosen)]
    return built, published


def _by(evaluation):
    return {(m["group"], m["metric"]): m for m in evaluation.results}


def test_the_published_connective_scores_one_and_then_scores_the_temporal_iconic_share(
    release, chat_server
):
    built, published = release
    asked = published[published["published_label"] != "unrelated"]
    gold = {
        f"{row.pair_id}/{row.order}": PER_LABEL[row.published_label] for row in asked.itertuples()
    }

    right = evaluate_with(chat_server, built, lambda q: {"answer": gold[q.id]}, name="explica-gold")
    assert right.run.status == "done", right.run.error
    # the release asks exactly the related ordered pairs of the benchmark's labels
    assert right.questions == len(gold) and right.answered == len(gold)
    figures = _by(right)
    assert figures[("all", "accuracy")]["value"] == 1.0
    assert {group for group, _ in figures} >= {
        "relation=causal",
        "relation=temporal",
        "order=iconic",
        "order=anti-iconic",
    }

    then = evaluate_with(chat_server, built, lambda q: {"answer": "then"}, name="explica-then")
    figures = _by(then)
    labels = asked["published_label"]
    temporal = labels.str.startswith("temporal")
    assert figures[("all", "accuracy")]["value"] == pytest.approx(
        (labels == "temporal-iconic").mean()
    )
    assert figures[("relation=causal", "accuracy")]["value"] == 0.0
    assert figures[("relation=temporal", "accuracy")]["value"] == pytest.approx(
        (labels[temporal] == "temporal-iconic").mean()
    )
    assert figures[("order=anti-iconic", "accuracy")]["value"] == 0.0
    assert figures[("all", "accuracy")]["n"] == len(gold)
    assert then.baseline == []  # the gold is the people's ratings: no separate baseline
