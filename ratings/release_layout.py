"""The ExpliCa layout of a ratings release: one row per ordered pair with the mean rating of
each connective, the preferred connective and the derived label (ExpliCa's `explica_freq_4800`
style, one row per ordered pair instead of per item), plus the per-item means.

Registered for project kind "ratings" in RatingsConfig.ready(). It reads the project's ratings
into one frame (4,800 items × 15 ratings is about 72,000 rows, a few MB), which is bounded by
the project's size, not by the release's history.
"""

from __future__ import annotations

from pathlib import Path

from annotation.errors import ApplicationError
from ratings import selectors
from ratings.models import SentencePair
from ratings.stats import item_summary, pair_labels
from releases.hf_dataset import DatasetConfig, DatasetLayout
from releases.layouts import LayoutContext
from releases.writers import FileEntry, write_csv


def explica_layout(context: LayoutContext) -> list[Path | FileEntry]:
    ratings = selectors.ratings_context(context.project)
    if ratings is None:
        raise ApplicationError(
            f"{context.project.name} is a ratings project without its ratings set-up; "
            "create it with ratings_project_create."
        )
    items = selectors.items_frame(context.project)
    frame = selectors.ratings_frame(ratings, source="all", items=items)
    frame = frame[~frame["cannot_judge"].fillna(False).astype(bool)] if len(frame) else frame
    if not len(frame):
        return []
    summary = item_summary(frame)
    labels = pair_labels(summary, ratings.connective_set, ratings.rule)
    words = [connective.word for connective in ratings.connective_set.connectives]
    pairs = {
        pair.pair_id: pair
        for pair in SentencePair.objects.filter(project=context.project).only(
            "pair_id", "sentence_a", "sentence_b", "subset", "origin", "flags"
        )
    }

    def pair_rows():
        for row in labels.itertuples(index=False):
            pair = pairs.get(str(row.pair_id))
            first, second = (
                (
                    (pair.sentence_a, pair.sentence_b)
                    if row.order == "AB"
                    else (pair.sentence_b, pair.sentence_a)
                )
                if pair
                else ("", "")
            )
            yield {
                "pair_id": row.pair_id,
                "order": row.order,
                "first_sentence": first,
                "second_sentence": second,
                "subset": pair.subset if pair else "",
                "origin": pair.origin if pair else "",
                **{f"mean_{word}": _rounded(getattr(row, f"mean_{word}")) for word in words},
                "preferred_connective": "" if row.is_unrelated else row.best_connective,
                "tied_connectives": row.tied_connectives,
                "relation": row.relation,
                "connective_order": row.connective_order,
                "label": row.label,
            }

    pair_columns = [
        "pair_id", "order", "first_sentence", "second_sentence", "subset", "origin",
        *[f"mean_{word}" for word in words],
        "preferred_connective", "tied_connectives", "relation", "connective_order", "label",
    ]  # fmt: skip
    item_columns = [
        "item_key",
        "pair_id",
        "order",
        "connective",
        "n",
        "mean",
        "sd",
        "ci_low",
        "ci_high",
    ]
    item_rows = (
        {column: _rounded(value) for column, value in zip(item_columns, row, strict=True)}
        for row in summary[item_columns].itertuples(index=False)
    )
    return [
        write_csv(pair_rows(), context.out_dir / "explica_ordered_pairs.csv", columns=pair_columns),
        write_csv(item_rows, context.out_dir / "explica_item_means.csv", columns=item_columns),
    ]


def _rounded(value):
    if isinstance(value, float):
        return "" if value != value else round(value, 4)
    return value


# -- the Hugging Face dataset (releases/hf_dataset.py) ----------------------------------------

EXPLICA_DATASET = DatasetLayout(
    configs=[
        DatasetConfig(
            "ordered_pairs",
            "explica_ordered_pairs.csv",
            numbers=["mean_*"],
            description="One ordered sentence pair per row: the mean rating of each connective, "
            "the preferred connective and the derived label.",
        ),
        DatasetConfig(
            "items",
            "explica_item_means.csv",
            numbers=["mean", "sd", "ci_low", "ci_high"],
            integers=["n"],
            description="One rated item (pair, order, connective) per row with its mean rating "
            "and interval.",
        ),
    ],
    task_categories=["text-classification"],
)
